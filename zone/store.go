package zone

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/flock"
)

// SchemaVersion is the layout of rauha.db this package reads and writes.
// Version 2 added the zone_ids and zone_members indexes: before them,
// allocating a zone id decoded every zone record and listing a zone's
// members decoded every container record, so create, delete and zone list
// slowed down with the number of containers. Version 3 keeps every zone id
// at or below MaxZoneID: earlier versions handed out ids above it once a
// root had seen 1023 zones, which the kernel refused. An older database is
// migrated by the first Update (prepare).
const SchemaVersion = 3

// MaxZoneID is the highest zone id. The kernel's maps are arrays indexed by
// it (bpf.MaxZones is MaxZoneID+1, a test in libzone checks it), zone 0
// being the host, so at most MaxZoneID zones exist at once in a root.
const MaxZoneID = 1023

// DBName is the state database's file name under the runtime root.
const DBName = "rauha.db"

// DefaultLockTimeout bounds how long an operation waits for another rauha
// process to release the database.
const DefaultLockTimeout = 10 * time.Second

// Keys of the meta bucket.
const (
	MetaSchemaVersion         = "schema_version"
	MetaBootID                = "boot_id"
	MetaEnforcementGeneration = "enforcement_generation"
)

var (
	bucketMeta       = []byte("meta")
	bucketZones      = []byte("zones")
	bucketContainers = []byte("containers")
	// bucketZoneIDs maps a zone's kernel id (4 bytes, big-endian) to its name.
	bucketZoneIDs = []byte("zone_ids")
	// bucketZoneMembers holds one empty value per container, keyed by its
	// zone's name, a NUL and its id (names have no control characters), so
	// that a zone's members are one cursor range in id order.
	bucketZoneMembers = []byte("zone_members")
)

// ErrNotFound is wrapped by lookups of zones and containers that do not exist.
var ErrNotFound = errors.New("not found")

// ErrLocked is wrapped when another process held the database for longer than
// the lock timeout.
var ErrLocked = errors.New("state database is locked")

// Zone is a zone record.
type Zone struct {
	Name string `json:"name"`
	// ID is the zone's number in kernel maps: 1..MaxZoneID, unique among
	// the zones of a root, allocated by PutZone (see assignZoneID).
	ID           uint32 `json:"id"`
	Policy       Policy `json:"policy"`
	PolicySource string `json:"policy_source"` // "preset:NAME" or "file:PATH", see LoadPolicy
	// Learning is the base policy of a zone that learns (Policy is then
	// LearnPolicy(Learning), mode "learn"); nil when the zone enforces.
	Learning *Policy `json:"learning,omitempty"`
	// Implicit zones were created for one container and are removed with it.
	Implicit bool `json:"implicit"`
	// Generation is bumped by PutZone on every policy change.
	Generation uint64    `json:"generation"`
	Created    time.Time `json:"created"`
}

// Container is a container record.
type Container struct {
	ID         string `json:"id"`
	Zone       string `json:"zone"`
	Bundle     string `json:"bundle"`
	CgroupPath string `json:"cgroup_path"`
	CgroupID   uint64 `json:"cgroup_id"`
	// Addresses are the addresses of the member's network namespace
	// registered as its zone's (network.allowed_zones), read at create and
	// again by reconcile. A member in the host's namespace has none.
	Addresses []string `json:"addresses,omitempty"`
	// Lease is a bridged member's address in its zone's subnet (Tx.Lease),
	// and Ports what it publishes on the host; both nil for other members.
	Lease *Lease `json:"lease,omitempty"`
	// Lease6 is its IPv6 address when its zone has network.ipv6 (Tx.Lease6).
	Lease6 *Lease `json:"lease6,omitempty"`
	Ports  []Port `json:"ports,omitempty"`
	Pid    int    `json:"pid"`
	// Creator is the pid of the rauha process running the create, so
	// reconcile can tell a create in progress from one that was killed.
	Creator int       `json:"creator,omitempty"`
	Status  string    `json:"status"`
	Created time.Time `json:"created"`
}

// Store is the bbolt state database at <root>/rauha.db. There is no daemon and
// many rauha processes run at once, so every Update or View opens the file,
// runs one short transaction and closes it again: never keep a transaction
// open across a container start.
type Store struct {
	root    string
	timeout time.Duration
	// mu queues this process's goroutines in memory, so that only one of
	// them at a time waits in the kernel for the root lock.
	mu sync.Mutex
}

// OpenStore returns the store for a runtime root. It does not touch the file
// system.
func OpenStore(root string) *Store {
	return &Store{root: root, timeout: DefaultLockTimeout}
}

// WithLockTimeout returns a store for the same root that waits at most d for
// the database lock.
func (s *Store) WithLockTimeout(d time.Duration) *Store {
	return &Store{root: s.root, timeout: d}
}

// Path is the database file.
func (s *Store) Path() string { return filepath.Join(s.root, DBName) }

// Exists tells whether the database holds anything: false until the first
// Update of a root has written it. Without the lock it can only be a hint:
// another process may create the database right after.
func (s *Store) Exists() bool {
	info, err := os.Stat(s.Path())
	return err == nil && info.Size() > 0
}

// Update runs fn in one read-write transaction, creating the root directory
// (0700) and the database if needed. The transaction commits if fn returns nil.
func (s *Store) Update(fn func(tx *Tx) error) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return fmt.Errorf("create runtime root: %w", err)
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	db, err := s.open(false)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close state database %s: %w", s.Path(), cerr)
		}
	}()
	return db.Update(func(btx *bolt.Tx) error {
		if err := s.prepare(btx); err != nil {
			return err
		}
		return fn(&Tx{tx: btx, writable: true})
	})
}

// View runs fn in one read-only transaction. When the database does not exist
// yet it creates nothing: fn sees an empty store. fn holds the same lock as a
// writer whenever the root exists (with or without a database), so it may
// rely on no Update running until it returns.
func (s *Store) View(fn func(tx *Tx) error) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.root); errors.Is(err, fs.ErrNotExist) {
		return fn(&Tx{})
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	// Under the lock a zero-size file can only be left by an Update that
	// died between creating and initialising it; it holds nothing, and a
	// read-only bbolt open would fail on it.
	info, err := os.Stat(s.Path())
	if errors.Is(err, fs.ErrNotExist) || (err == nil && info.Size() == 0) {
		return fn(&Tx{})
	}
	if err != nil {
		return fmt.Errorf("state database: %w", err)
	}
	db, err := s.open(true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close state database %s: %w", s.Path(), cerr)
		}
	}()
	return db.View(func(btx *bolt.Tx) error {
		if err := s.checkSchema(btx); err != nil {
			return err
		}
		return fn(&Tx{tx: btx})
	})
}

// lock takes an exclusive flock on the root directory for one transaction;
// the returned function releases it.
//
// bbolt's own file lock is not enough across processes: it polls every 50 ms,
// and readers share it, so a steady stream of overlapping readers (a shim
// polling `state`) keeps every writer out until it times out. Here readers and
// writers queue in the kernel for one exclusive lock and are woken as soon as
// it is free; transactions are short, so serialising reads costs little. The
// directory is locked rather than a lock file so that View creates no file.
func (s *Store) lock() (func(), error) {
	fd, err := unix.Open(s.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open runtime root %s: %w", s.root, err)
	}
	got := make(chan error, 1)
	go func() { got <- flock.Lock(fd, unix.LOCK_EX) }()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("lock runtime root %s: %w", s.root, err)
		}
		return func() { unix.Close(fd) }, nil
	case <-timer.C:
		holders := lockHolders(s.root)
		// A blocked flock cannot be cancelled: let it finish in the
		// background and drop the lock as soon as it is granted.
		go func() {
			<-got
			unix.Close(fd)
		}()
		return nil, fmt.Errorf("%w: %s (lock on %s) is held by %s for more than %s; retry when it has finished",
			ErrLocked, s.Path(), s.root, holders, s.timeout)
	}
}

func (s *Store) open(readOnly bool) (*bolt.DB, error) {
	db, err := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: s.timeout, ReadOnly: readOnly})
	if errors.Is(err, bolt.ErrTimeout) {
		// Every rauha process takes the root lock first, so the holder is
		// some other program with the database open.
		return nil, fmt.Errorf("%w: %s is held by %s for more than %s; retry when it has finished",
			ErrLocked, s.Path(), lockHolders(s.Path()), s.timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", s.Path(), err)
	}
	return db, nil
}

// prepare creates the buckets of a new database, migrates an older schema
// and refuses one written by a newer rauha.
func (s *Store) prepare(btx *bolt.Tx) error {
	if err := s.checkSchema(btx); err != nil {
		return err
	}
	for _, name := range [][]byte{bucketMeta, bucketZones, bucketContainers, bucketZoneIDs, bucketZoneMembers, bucketSubnets, bucketSubnets6, bucketLeases, bucketPorts} {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s in %s: %w", name, s.Path(), err)
		}
	}
	meta := btx.Bucket(bucketMeta)
	if string(meta.Get([]byte(MetaSchemaVersion))) == strconv.Itoa(SchemaVersion) {
		return nil
	}
	if err := buildIndexes(btx); err != nil {
		return fmt.Errorf("migrate %s to schema version %d: %w", s.Path(), SchemaVersion, err)
	}
	if err := renumberZones(btx); err != nil {
		return fmt.Errorf("migrate %s to schema version %d: %w", s.Path(), SchemaVersion, err)
	}
	return meta.Put([]byte(MetaSchemaVersion), []byte(strconv.Itoa(SchemaVersion)))
}

// renumberZones gives a zone whose id is above MaxZoneID a free one. Such a
// zone was stored by a rauha before schema 3; the kernel refused its policy
// and every container in it, so no kernel state uses the old id.
func renumberZones(btx *bolt.Tx) error {
	b, ids := btx.Bucket(bucketZones), btx.Bucket(bucketZoneIDs)
	zones, err := list(b, "zone", func(z *Zone) bool { return z.ID > MaxZoneID })
	if err != nil {
		return err
	}
	tx := &Tx{tx: btx, writable: true}
	for _, z := range zones {
		if err := ids.Delete(zoneIDKey(z.ID)); err != nil {
			return fmt.Errorf("zone %q: unindex kernel id %d: %w", z.Name, z.ID, err)
		}
		z.ID = 0
		if err := tx.assignZoneID(b, &z); err != nil {
			return fmt.Errorf("zone %q: %w", z.Name, err)
		}
		if err := ids.Put(zoneIDKey(z.ID), []byte(z.Name)); err != nil {
			return fmt.Errorf("zone %q: index kernel id %d: %w", z.Name, z.ID, err)
		}
		if err := put(b, "zone", z.Name, &z); err != nil {
			return err
		}
	}
	return nil
}

// buildIndexes fills the index buckets from the records, for a database
// written before they existed (or a new, empty one).
func buildIndexes(btx *bolt.Tx) error {
	ids, members := btx.Bucket(bucketZoneIDs), btx.Bucket(bucketZoneMembers)
	zones, err := list[Zone](btx.Bucket(bucketZones), "zone", nil)
	if err != nil {
		return err
	}
	for _, z := range zones {
		if err := ids.Put(zoneIDKey(z.ID), []byte(z.Name)); err != nil {
			return fmt.Errorf("index zone %q: %w", z.Name, err)
		}
	}
	cs, err := list[Container](btx.Bucket(bucketContainers), "container", nil)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := members.Put(memberKey(c.Zone, c.ID), nil); err != nil {
			return fmt.Errorf("index container %q: %w", c.ID, err)
		}
	}
	return nil
}

func zoneIDKey(id uint32) []byte { return binary.BigEndian.AppendUint32(nil, id) }

func memberKey(zone, id string) []byte { return []byte(zone + "\x00" + id) }

func (s *Store) checkSchema(btx *bolt.Tx) error {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		return nil
	}
	raw := meta.Get([]byte(MetaSchemaVersion))
	if raw == nil {
		return nil
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 1 {
		return fmt.Errorf("state database %s has an unreadable schema version %q; it was not written by rauha", s.Path(), raw)
	}
	if v > SchemaVersion {
		return fmt.Errorf("state database %s has schema version %d, but this rauha understands only up to %d: use the newer rauha binary that wrote it, or a different --root", s.Path(), v, SchemaVersion)
	}
	return nil
}

// lockHolders names the processes holding a lock on path, from /proc/locks,
// so a lock timeout says whom the caller waited for.
func lockHolders(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "another process"
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return "another process"
	}
	// /proc/locks lines: "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF";
	// waiters have a "->" after the number and are not holders.
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	var holders []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] == "->" || f[5] != want {
			continue
		}
		pid := f[4]
		desc := "pid " + pid
		if comm, err := os.ReadFile("/proc/" + pid + "/comm"); err == nil {
			desc += " (" + strings.TrimSpace(string(comm)) + ")"
		}
		holders = append(holders, desc)
	}
	if len(holders) == 0 {
		return "another process"
	}
	return strings.Join(holders, ", ")
}

// Tx is one transaction. A Tx from View on a database that does not exist has
// no bbolt transaction and reads as empty.
type Tx struct {
	tx       *bolt.Tx
	writable bool
}

func (tx *Tx) bucket(name []byte) *bolt.Bucket {
	if tx.tx == nil {
		return nil
	}
	return tx.tx.Bucket(name)
}

func (tx *Tx) writableBucket(name []byte) (*bolt.Bucket, error) {
	if !tx.writable {
		return nil, errors.New("state database: write in a read-only transaction (use Store.Update)")
	}
	return tx.tx.Bucket(name), nil
}

// Zone returns the named zone; the error wraps ErrNotFound if there is none.
func (tx *Tx) Zone(name string) (*Zone, error) {
	var z Zone
	if err := get(tx.bucket(bucketZones), "zone", name, &z); err != nil {
		return nil, err
	}
	return &z, nil
}

// PutZone stores z, updating z in place with what the store decides:
//   - a new zone gets the next free kernel ID (if z.ID is 0; see
//     assignZoneID), Generation 1 and Created now (if zero);
//   - an existing zone keeps its ID (a different non-zero z.ID is an error:
//     kernel maps are keyed by it) and Created, and its Generation is bumped
//     when the policy's digest changed.
//
// The name and the policy are validated first.
func (tx *Tx) PutZone(z *Zone) error {
	b, err := tx.writableBucket(bucketZones)
	if err != nil {
		return err
	}
	if err := ValidateName("zone name", z.Name); err != nil {
		return err
	}
	if err := z.Policy.Validate(); err != nil {
		return fmt.Errorf("zone %q: invalid policy: %w", z.Name, err)
	}
	old, err := tx.Zone(z.Name)
	switch {
	case err == nil:
		if z.ID != 0 && z.ID != old.ID {
			return fmt.Errorf("zone %q: cannot change kernel id %d to %d; delete and recreate the zone instead", z.Name, old.ID, z.ID)
		}
		z.ID, z.Created, z.Generation = old.ID, old.Created, old.Generation
		if old.Policy.Digest() != z.Policy.Digest() {
			z.Generation++
		}
	case errors.Is(err, ErrNotFound):
		if err := tx.assignZoneID(b, z); err != nil {
			return err
		}
		z.Generation = max(z.Generation, 1)
		if z.Created.IsZero() {
			z.Created = time.Now().UTC()
		}
		if err := tx.tx.Bucket(bucketZoneIDs).Put(zoneIDKey(z.ID), []byte(z.Name)); err != nil {
			return fmt.Errorf("zone %q: index kernel id %d: %w", z.Name, z.ID, err)
		}
	default:
		return err
	}
	return put(b, "zone", z.Name, z)
}

// assignZoneID checks a zone's explicit id, or gives it the first free id
// after the last one handed out, wrapping from MaxZoneID to 1: the kernel
// holds no more, and a root sees far more zones over its life than that
// (every container without a zone annotation has one). Going round means an
// id comes back only after every other one was handed out since. That is
// safe even then: deleting a zone removes its id's kernel policy, peers and
// counters (bpf's DeletePolicy), reconcile removes what a crash left, a new
// zone withdraws what other zones still grant its id (libzone's
// Enforcer.Claim) and its first push replaces its own entries before it
// has a member, and an event older than the zone that now has its id is
// not put under that zone's name (libzone's Drain).
func (tx *Tx) assignZoneID(b *bolt.Bucket, z *Zone) error {
	ids := tx.tx.Bucket(bucketZoneIDs)
	if z.ID != 0 {
		if z.ID > MaxZoneID {
			return fmt.Errorf("zone %q: kernel id %d is above the highest, %d", z.Name, z.ID, MaxZoneID)
		}
		if owner := ids.Get(zoneIDKey(z.ID)); owner != nil {
			return fmt.Errorf("zone %q: kernel id %d already belongs to zone %q", z.Name, z.ID, owner)
		}
		return nil
	}
	for range MaxZoneID {
		seq, err := b.NextSequence()
		if err != nil {
			return fmt.Errorf("allocate zone id: %w", err)
		}
		id := uint32((seq-1)%MaxZoneID) + 1
		if ids.Get(zoneIDKey(id)) == nil {
			z.ID = id
			return nil
		}
	}
	return fmt.Errorf("allocate zone id: all %d zone ids are taken by zones of this root; delete the zones that are no longer needed ('rauha zone list')", MaxZoneID)
}

// DeleteZone removes a zone that has no member containers.
func (tx *Tx) DeleteZone(name string) error {
	b, err := tx.writableBucket(bucketZones)
	if err != nil {
		return err
	}
	z, err := tx.Zone(name)
	if err != nil {
		return err
	}
	members, err := tx.Members(name)
	if err != nil {
		return err
	}
	if len(members) > 0 {
		ids := make([]string, len(members))
		for i, c := range members {
			ids[i] = c.ID
		}
		return fmt.Errorf("zone %q still has %d member container(s) (%s); delete them first", name, len(members), strings.Join(ids, ", "))
	}
	if err := tx.DeleteObservations(name); err != nil {
		return err
	}
	if err := tx.releaseSubnet(name); err != nil {
		return err
	}
	if err := tx.tx.Bucket(bucketZoneIDs).Delete(zoneIDKey(z.ID)); err != nil {
		return fmt.Errorf("zone %q: unindex kernel id %d: %w", name, z.ID, err)
	}
	return b.Delete([]byte(name))
}

// Zones returns all zones sorted by name.
func (tx *Tx) Zones() ([]Zone, error) {
	return list[Zone](tx.bucket(bucketZones), "zone", nil)
}

// HasZones reports whether any zone exists, without decoding one.
func (tx *Tx) HasZones() bool {
	b := tx.bucket(bucketZones)
	if b == nil {
		return false
	}
	k, _ := b.Cursor().First()
	return k != nil
}

// Container returns a container record; the error wraps ErrNotFound if there
// is none.
func (tx *Tx) Container(id string) (*Container, error) {
	var c Container
	if err := get(tx.bucket(bucketContainers), "container", id, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutContainer stores c. Its zone must already be stored (the zone is written
// before the container is created); Created is set to now if zero.
func (tx *Tx) PutContainer(c *Container) error {
	b, err := tx.writableBucket(bucketContainers)
	if err != nil {
		return err
	}
	if err := ValidateName("container id", c.ID); err != nil {
		return err
	}
	if _, err := tx.Zone(c.Zone); err != nil {
		return fmt.Errorf("container %q: %w (store the zone before its containers)", c.ID, err)
	}
	if c.Created.IsZero() {
		c.Created = time.Now().UTC()
	}
	if err := tx.unindexMember(c.ID); err != nil {
		return err
	}
	if err := tx.tx.Bucket(bucketZoneMembers).Put(memberKey(c.Zone, c.ID), nil); err != nil {
		return fmt.Errorf("container %q: index as member of zone %q: %w", c.ID, c.Zone, err)
	}
	return put(b, "container", c.ID, c)
}

// DeleteContainer removes a container record.
func (tx *Tx) DeleteContainer(id string) error {
	b, err := tx.writableBucket(bucketContainers)
	if err != nil {
		return err
	}
	if b.Get([]byte(id)) == nil {
		return fmt.Errorf("container %q: %w", id, ErrNotFound)
	}
	if err := tx.unindexMember(id); err != nil {
		return err
	}
	if old, err := tx.Container(id); err == nil {
		if err := tx.releaseLease(old); err != nil {
			return err
		}
	}
	return b.Delete([]byte(id))
}

// unindexMember removes a stored container's entry from the member index.
func (tx *Tx) unindexMember(id string) error {
	old, err := tx.Container(id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := tx.tx.Bucket(bucketZoneMembers).Delete(memberKey(old.Zone, id)); err != nil {
		return fmt.Errorf("container %q: unindex as member of zone %q: %w", id, old.Zone, err)
	}
	return nil
}

// Containers returns all containers sorted by id.
func (tx *Tx) Containers() ([]Container, error) {
	return list[Container](tx.bucket(bucketContainers), "container", nil)
}

// Members returns the containers of a zone sorted by id.
func (tx *Tx) Members(zone string) ([]Container, error) {
	idx := tx.bucket(bucketZoneMembers)
	if idx == nil {
		// No index: a schema 1 database that no Update has migrated yet
		// (or no database at all).
		return list(tx.bucket(bucketContainers), "container", func(c *Container) bool { return c.Zone == zone })
	}
	var out []Container
	prefix := memberKey(zone, "")
	cur := idx.Cursor()
	for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
		c, err := tx.Container(string(k[len(prefix):]))
		if err != nil {
			return nil, fmt.Errorf("member index of zone %q: %w", zone, err)
		}
		out = append(out, *c)
	}
	return out, nil
}

// Meta returns a meta value, "" if it was never set.
func (tx *Tx) Meta(key string) (string, error) {
	b := tx.bucket(bucketMeta)
	if b == nil {
		return "", nil
	}
	return string(b.Get([]byte(key))), nil
}

// SetMeta sets a meta value. The schema version belongs to the store.
func (tx *Tx) SetMeta(key, value string) error {
	b, err := tx.writableBucket(bucketMeta)
	if err != nil {
		return err
	}
	if key == MetaSchemaVersion || key == "" {
		return fmt.Errorf("meta key %q cannot be set", key)
	}
	return b.Put([]byte(key), []byte(value))
}

func get(b *bolt.Bucket, kind, key string, v any) error {
	var raw []byte
	if b != nil {
		raw = b.Get([]byte(key))
	}
	if raw == nil {
		return fmt.Errorf("%s %q: %w", kind, key, ErrNotFound)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s %q: corrupt record in state database: %w", kind, key, err)
	}
	return nil
}

func put(b *bolt.Bucket, kind, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s %q: encode record: %w", kind, key, err)
	}
	if err := b.Put([]byte(key), raw); err != nil {
		return fmt.Errorf("%s %q: write record: %w", kind, key, err)
	}
	return nil
}

// list decodes every record of a bucket in key order, keeping those keep
// accepts (all when keep is nil).
func list[T any](b *bolt.Bucket, kind string, keep func(*T) bool) ([]T, error) {
	var out []T
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, raw []byte) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("%s %q: corrupt record in state database: %w", kind, k, err)
		}
		if keep == nil || keep(&v) {
			out = append(out, v)
		}
		return nil
	})
	return out, err
}
