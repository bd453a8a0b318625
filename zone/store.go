package zone

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// root had seen 1023 zones, which the kernel refused. Version 4 moved the
// containers' buckets into a file of their own, one per boot (see Store).
// An older database is migrated by the first Update (prepare).
const SchemaVersion = 4

// MaxZoneID is the highest zone id. The kernel's maps are arrays indexed by
// it (bpf.MaxZones is MaxZoneID+1, a test in libzone checks it), zone 0
// being the host, so at most MaxZoneID zones exist at once in a root.
const MaxZoneID = 1023

// DBName is the zones file's name under the runtime root.
const DBName = "rauha.db"

// The containers file of a boot is <root>/containers-<boot id>.db.
const (
	containersPrefix = "containers-"
	containersSuffix = ".db"
	bootIDFile       = "/proc/sys/kernel/random/boot_id"
)

// DefaultLockTimeout bounds how long an operation waits for another rauha
// process to release the database.
const DefaultLockTimeout = 10 * time.Second

// Keys of the meta bucket.
const (
	MetaSchemaVersion = "schema_version"
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

// errReadOnly is what a write in a View's transaction fails with.
var errReadOnly = errors.New("state database: write in a read-only transaction (use Store.Update)")

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

// Store is rauha's state: two bbolt files in the runtime root, opened by
// every Update or View as the transaction needs them. There is no daemon and
// many rauha processes run at once, so every Update or View takes the
// root's lock, runs one short transaction and closes the files again: never
// keep a transaction open across a container start.
//
// <root>/rauha.db holds what outlives the containers: zones, their kernel
// ids, subnets and learning recordings. Each of its commits is synced to
// disk. <root>/containers-<boot id>.db holds what lives only as long as the
// containers of one boot: their records, the zone member index, leases and
// published ports. Its commits are not synced: a rauha process that dies
// loses nothing (its writes are in the page cache), and only a crash of the
// kernel or a power loss, after which every container of that boot is gone
// anyway, can leave the file torn. It is named after the boot, so such a
// file is never opened again: the first write of a new boot removes it.
type Store struct {
	root    string
	timeout time.Duration
	// mu queues this process's goroutines in memory, so that only one of
	// them at a time waits in the kernel for the root lock.
	mu sync.Mutex
	// bootID names the containers file; read once, under mu.
	bootID string
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

// Path is the zones file, rauha.db.
func (s *Store) Path() string { return filepath.Join(s.root, DBName) }

// containersPath is this boot's containers file.
func (s *Store) containersPath() (string, error) {
	if s.bootID == "" {
		raw, err := os.ReadFile(bootIDFile)
		if err != nil {
			return "", fmt.Errorf("read the boot id, which names the containers file: %w", err)
		}
		id := strings.TrimSpace(string(raw))
		if ValidateName("boot id", id) != nil {
			return "", fmt.Errorf("%s holds %q, not a boot id", bootIDFile, raw)
		}
		s.bootID = id
	}
	return filepath.Join(s.root, containersPrefix+s.bootID+containersSuffix), nil
}

// Exists tells whether the database holds anything: false until the first
// Update of a root has written it. Without the lock it can only be a hint:
// another process may create the database right after.
func (s *Store) Exists() bool {
	info, err := os.Stat(s.Path())
	return err == nil && info.Size() > 0
}

// Update runs fn in one read-write transaction, creating the root directory
// (0700) and the files it needs. The transaction commits if fn returns nil:
// the containers file first, then the zones file.
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
	tx := &Tx{s: s, writable: true}
	defer func() { err = errors.Join(err, tx.close()) }()
	// A file that could not be opened read as empty: fn's own error may
	// come from that, so the cause goes first.
	if err := fn(tx); tx.err != nil || err != nil {
		return cmp.Or(tx.err, err)
	}
	// Containers first: a process killed between the two commits leaves
	// at worst a record whose new named zone (or a lease whose zone's new
	// subnet) is not stored yet, of a create that had not begun, which
	// reconcile removes; never a lost record.
	for _, f := range []*dbFile{&tx.containers, &tx.zones} {
		if f.tx == nil || !f.dirty {
			continue // close rolls it back
		}
		err := f.tx.Commit()
		f.tx = nil
		if err != nil {
			return fmt.Errorf("commit %s: %w", f.db.Path(), err)
		}
	}
	return nil
}

// View runs fn in one read-only transaction. A file that does not exist yet
// reads as empty, and nothing is created. fn holds the same lock as a writer
// whenever the root exists, so it may rely on no Update running until it
// returns.
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
	tx := &Tx{s: s}
	defer func() { err = errors.Join(err, tx.close()) }()
	err = fn(tx)
	return cmp.Or(tx.err, err)
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

func (s *Store) open(path string, readOnly, noSync bool) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: s.timeout, ReadOnly: readOnly, NoSync: noSync, NoGrowSync: noSync})
	if errors.Is(err, bolt.ErrTimeout) {
		// Every rauha process takes the root lock first, so the holder is
		// some other program with the database open.
		return nil, fmt.Errorf("%w: %s is held by %s for more than %s; retry when it has finished",
			ErrLocked, path, lockHolders(path), s.timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	return db, nil
}

// prepare creates the buckets of a new zones file, migrates an older
// schema and refuses one written by a newer rauha.
func (tx *Tx) prepare(btx *bolt.Tx) error {
	s := tx.s
	if err := checkSchema(btx, s.Path()); err != nil {
		return err
	}
	for _, name := range [][]byte{bucketMeta, bucketZones, bucketZoneIDs, bucketSubnets, bucketSubnets6} {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s in %s: %w", name, s.Path(), err)
		}
	}
	meta := btx.Bucket(bucketMeta)
	version := string(meta.Get([]byte(MetaSchemaVersion)))
	if version == strconv.Itoa(SchemaVersion) {
		return nil
	}
	tx.zones.dirty = true
	if version != "3" {
		// Before schema 4 the containers' buckets were in this file (a
		// new file has none); the migrations of schemas 1 and 2 index
		// them there.
		if btx.Bucket(bucketContainers) != nil {
			if _, err := btx.CreateBucketIfNotExists(bucketZoneMembers); err != nil {
				return fmt.Errorf("create bucket %s in %s: %w", bucketZoneMembers, s.Path(), err)
			}
		}
		if err := buildIndexes(btx); err != nil {
			return fmt.Errorf("migrate %s to schema version %d: %w", s.Path(), SchemaVersion, err)
		}
		if err := renumberZones(btx); err != nil {
			return fmt.Errorf("migrate %s to schema version %d: %w", s.Path(), SchemaVersion, err)
		}
	}
	if err := tx.moveContainers(btx); err != nil {
		return fmt.Errorf("migrate %s to schema version %d: %w", s.Path(), SchemaVersion, err)
	}
	return meta.Put([]byte(MetaSchemaVersion), []byte(strconv.Itoa(SchemaVersion)))
}

// moveContainers moves the containers' buckets of a zones file written
// before schema 4 into this boot's containers file. A process killed after
// the containers file committed and before the zones file did leaves them
// in both; the next Update copies them again.
func (tx *Tx) moveContainers(zones *bolt.Tx) error {
	if zones.Bucket(bucketContainers) == nil {
		return nil
	}
	ctx := tx.containersTx()
	if ctx == nil {
		return tx.err
	}
	tx.containers.dirty = true
	for _, name := range containerBuckets {
		from := zones.Bucket(name)
		if from == nil {
			continue
		}
		to := ctx.Bucket(name)
		if err := from.ForEach(func(k, v []byte) error { return to.Put(k, v) }); err != nil {
			return fmt.Errorf("copy bucket %s: %w", name, err)
		}
		if err := zones.DeleteBucket(name); err != nil {
			return fmt.Errorf("remove bucket %s: %w", name, err)
		}
	}
	return nil
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
	for _, z := range zones {
		if err := ids.Delete(zoneIDKey(z.ID)); err != nil {
			return fmt.Errorf("zone %q: unindex kernel id %d: %w", z.Name, z.ID, err)
		}
		z.ID = 0
		if err := assignZoneID(b, func(id uint32) []byte { return ids.Get(zoneIDKey(id)) }, &z); err != nil {
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

// checkSchema refuses a file (at path) written by a newer rauha.
func checkSchema(btx *bolt.Tx, path string) error {
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
		return fmt.Errorf("state database %s has an unreadable schema version %q; it was not written by rauha", path, raw)
	}
	if v > SchemaVersion {
		return fmt.Errorf("state database %s has schema version %d, but this rauha understands only up to %d: use the newer rauha binary that wrote it, or a different --root", path, v, SchemaVersion)
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

// Tx is one transaction over the zones file and this boot's containers
// file, each opened when the transaction first uses one of its buckets. A
// Tx from View on a root that does not exist reads as empty.
type Tx struct {
	s        *Store // nil: nothing to read
	writable bool
	zones    dbFile
	// containers is this boot's containers file; in a View of a root
	// whose zones file was written before schema 4 and not migrated yet,
	// the containers' buckets are read from the zones file (legacy).
	containers dbFile
	legacy     bool
	// err is the first failure to open a file: every write refuses, and
	// Update and View return it.
	err error
}

// dbFile is one of a transaction's files, opened at most once, and
// committed only when something in it changed: bbolt writes and syncs an
// unchanged transaction too.
type dbFile struct {
	opened bool
	dirty  bool
	db     *bolt.DB
	tx     *bolt.Tx
}

// containerBuckets are the buckets of the containers file.
var containerBuckets = [][]byte{bucketContainers, bucketZoneMembers, bucketLeases, bucketPorts}

func isContainerBucket(name []byte) bool {
	return slices.ContainsFunc(containerBuckets, func(b []byte) bool { return bytes.Equal(b, name) })
}

func (tx *Tx) bucket(name []byte) *bolt.Bucket {
	var btx *bolt.Tx
	if isContainerBucket(name) {
		btx = tx.containersTx()
	} else {
		btx = tx.zonesTx()
	}
	if btx == nil {
		return nil
	}
	return btx.Bucket(name)
}

func (tx *Tx) writableBucket(name []byte) (*bolt.Bucket, error) {
	if !tx.writable {
		return nil, errReadOnly
	}
	b := tx.changing(name)
	if tx.err != nil {
		return nil, tx.err
	}
	if b == nil {
		return nil, fmt.Errorf("state database: bucket %s is missing", name)
	}
	return b, nil
}

// changing returns bucket name (nil when it does not exist) for a write,
// which its file's commit then includes. Only for writable transactions.
func (tx *Tx) changing(name []byte) *bolt.Bucket {
	b := tx.bucket(name)
	if b == nil {
		return nil
	}
	if isContainerBucket(name) {
		tx.containers.dirty = true
	} else {
		tx.zones.dirty = true
	}
	return b
}

// zonesTx returns the transaction on the zones file, opening it (and, in an
// Update, preparing it) on first use; nil when there is nothing to read or
// it could not be opened (tx.err).
func (tx *Tx) zonesTx() *bolt.Tx {
	f := &tx.zones
	if f.opened || tx.s == nil || tx.err != nil {
		return f.tx
	}
	f.opened = true
	path := tx.s.Path()
	if !tx.writable {
		// Under the lock a zero-size file can only be left by an Update
		// that died between creating and initialising it; it holds
		// nothing, and a read-only bbolt open would fail on it.
		info, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && info.Size() == 0) {
			return nil
		} else if err != nil {
			tx.err = fmt.Errorf("state database: %w", err)
			return nil
		}
	}
	if err := tx.begin(f, path, false); err != nil {
		tx.err = err
		return nil
	}
	if err := tx.zonesReady(); err != nil {
		tx.err = err
		return nil
	}
	return f.tx
}

func (tx *Tx) zonesReady() error {
	if !tx.writable {
		return checkSchema(tx.zones.tx, tx.s.Path())
	}
	return tx.prepare(tx.zones.tx)
}

// containersTx is zonesTx for this boot's containers file. The first
// Update of a boot creates it, removes the files of earlier boots and
// moves the containers' buckets of an older zones file into it.
func (tx *Tx) containersTx() *bolt.Tx {
	f := &tx.containers
	if f.opened || tx.s == nil || tx.err != nil {
		if tx.legacy {
			return tx.zones.tx
		}
		return f.tx
	}
	f.opened = true
	path, err := tx.s.containersPath()
	if err != nil {
		tx.err = err
		return nil
	}
	info, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		tx.err = fmt.Errorf("state database: %w", err)
		return nil
	}
	if (err != nil || info.Size() == 0) && !tx.writable {
		return tx.legacyContainers()
	}
	if err := tx.begin(f, path, true); err != nil {
		tx.err = err
		return nil
	}
	if err := checkSchema(f.tx, path); err != nil {
		tx.err = err
		return nil
	}
	if f.tx.Bucket(bucketMeta) != nil {
		return f.tx
	}
	// Not written in this boot yet (or its first Update failed).
	if !tx.writable {
		return tx.legacyContainers()
	}
	f.dirty = true
	if err := initContainersFile(f.tx); err != nil {
		tx.err = fmt.Errorf("%s: %w", path, err)
		return nil
	}
	if err := tx.s.removeOtherBoots(path); err != nil {
		tx.err = err
		return nil
	}
	// Preparing the zones file moves what an older one holds.
	if tx.zonesTx(); tx.err != nil {
		return nil
	}
	return f.tx
}

// legacyContainers is where a View reads the containers' buckets when this
// boot has not written its containers file: from a zones file written
// before schema 4 that no Update has migrated yet, or nowhere.
func (tx *Tx) legacyContainers() *bolt.Tx {
	if z := tx.zonesTx(); z != nil && z.Bucket(bucketContainers) != nil {
		tx.legacy = true
		return z
	}
	return nil
}

// initContainersFile creates the buckets of a new containers file and
// records its schema, which a rauha that knows only an older one refuses.
func initContainersFile(btx *bolt.Tx) error {
	for _, name := range append([][]byte{bucketMeta, bucketZones, bucketZoneIDs, bucketSubnets, bucketSubnets6}, containerBuckets...) {
		if _, err := btx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return btx.Bucket(bucketMeta).Put([]byte(MetaSchemaVersion), []byte(strconv.Itoa(SchemaVersion)))
}

// begin opens a file and starts the transaction's part on it.
func (tx *Tx) begin(f *dbFile, path string, noSync bool) error {
	db, err := tx.s.open(path, !tx.writable, noSync)
	if err != nil {
		return err
	}
	btx, err := db.Begin(tx.writable)
	if err != nil {
		db.Close()
		return fmt.Errorf("begin a transaction on %s: %w", path, err)
	}
	f.db, f.tx = db, btx
	return nil
}

// close rolls back what was not committed and closes the files.
func (tx *Tx) close() error {
	var errs []error
	for _, f := range []*dbFile{&tx.containers, &tx.zones} {
		if f.tx != nil {
			_ = f.tx.Rollback()
			f.tx = nil
		}
		if f.db != nil {
			if err := f.db.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close state database %s: %w", f.db.Path(), err))
			}
			f.db = nil
		}
	}
	return errors.Join(errs...)
}

// removeOtherBoots removes the containers files of earlier boots: their
// containers are gone, and a file not synced before a crash may be torn.
func (s *Store) removeOtherBoots(keep string) error {
	old, err := filepath.Glob(filepath.Join(s.root, containersPrefix+"*"+containersSuffix))
	if err != nil {
		return fmt.Errorf("list containers files: %w", err)
	}
	for _, p := range old {
		if p == keep {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the containers file of an earlier boot: %w", err)
		}
	}
	return nil
}

// A zone's record, its kernel id's index and a bridged zone's subnets are
// in one of two files: a zone made for one container (Implicit) lives
// exactly as long as that container, so it is in the containers file beside
// it, and a container that runs in a zone of its own (every container
// without a zone annotation) writes no synced file; every other zone is in
// rauha.db. Names, kernel ids and subnets are unique across both.

// bucketOf returns bucket name of the containers file (implicit) or of
// rauha.db, for the buckets both files have; nil when the file or the
// bucket is absent.
func (tx *Tx) bucketOf(implicit bool, name []byte) *bolt.Bucket {
	if !implicit {
		return tx.bucket(name)
	}
	c := tx.containersTx()
	if c == nil || tx.legacy {
		return nil // the legacy file is rauha.db itself
	}
	return c.Bucket(name)
}

// bucketOfToChange is bucketOf for a write, which the file's commit then
// includes.
func (tx *Tx) bucketOfToChange(implicit bool, name []byte) (*bolt.Bucket, error) {
	if !implicit {
		return tx.writableBucket(name)
	}
	if !tx.writable {
		return nil, errReadOnly
	}
	c := tx.containersTx()
	if c == nil {
		return nil, tx.err
	}
	tx.containers.dirty = true
	b, err := c.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, fmt.Errorf("state database: bucket %s of the containers file: %w", name, err)
	}
	return b, nil
}

// zoneBuckets returns the zones and zone_ids buckets of one file.
func (tx *Tx) zoneBuckets(implicit bool) (zones, ids *bolt.Bucket) {
	return tx.bucketOf(implicit, bucketZones), tx.bucketOf(implicit, bucketZoneIDs)
}

// zoneBucketsToChange is zoneBuckets for a write.
func (tx *Tx) zoneBucketsToChange(implicit bool) (zones, ids *bolt.Bucket, err error) {
	if zones, err = tx.bucketOfToChange(implicit, bucketZones); err == nil {
		ids, err = tx.bucketOfToChange(implicit, bucketZoneIDs)
	}
	return zones, ids, err
}

// findZone returns the named zone and whether it is in the containers file.
func (tx *Tx) findZone(name string) (*Zone, bool, error) {
	for _, implicit := range []bool{true, false} {
		zones, _ := tx.zoneBuckets(implicit)
		var z Zone
		err := get(zones, "zone", name, &z)
		if err == nil {
			return &z, implicit, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, false, err
		}
	}
	return nil, false, fmt.Errorf("zone %q: %w", name, ErrNotFound)
}

// idOwner returns the zone holding kernel id id in either file, nil if none.
func (tx *Tx) idOwner(id uint32) []byte {
	for _, implicit := range []bool{true, false} {
		if _, ids := tx.zoneBuckets(implicit); ids != nil {
			if owner := ids.Get(zoneIDKey(id)); owner != nil {
				return owner
			}
		}
	}
	return nil
}

// Zone returns the named zone; the error wraps ErrNotFound if there is none.
func (tx *Tx) Zone(name string) (*Zone, error) {
	z, _, err := tx.findZone(name)
	return z, err
}

// PutZone stores z, updating z in place with what the store decides:
//   - a new zone gets the next free kernel ID (if z.ID is 0; see
//     assignZoneID), Generation 1 and Created now (if zero);
//   - an existing zone keeps its ID (a different non-zero z.ID is an error:
//     kernel maps are keyed by it) and Created, and its Generation is bumped
//     when the policy's digest changed.
//
// The name and the policy are validated first. A new zone goes to the
// containers file when it is Implicit, else to rauha.db; an existing one
// stays where it is.
func (tx *Tx) PutZone(z *Zone) error {
	if err := ValidateName("zone name", z.Name); err != nil {
		return err
	}
	if err := z.Policy.Validate(); err != nil {
		return fmt.Errorf("zone %q: invalid policy: %w", z.Name, err)
	}
	old, implicit, err := tx.findZone(z.Name)
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
		implicit = z.Implicit
	default:
		return err
	}
	b, ids, err := tx.zoneBucketsToChange(implicit)
	if err != nil {
		return err
	}
	if old == nil {
		if err := assignZoneID(b, tx.idOwner, z); err != nil {
			return err
		}
		// A recording is kept in rauha.db; one left by a zone of this
		// name that went with its boot is not the new zone's.
		if err := tx.DeleteObservations(z.Name); err != nil {
			return err
		}
		z.Generation = max(z.Generation, 1)
		if z.Created.IsZero() {
			z.Created = time.Now().UTC()
		}
		if err := ids.Put(zoneIDKey(z.ID), []byte(z.Name)); err != nil {
			return fmt.Errorf("zone %q: index kernel id %d: %w", z.Name, z.ID, err)
		}
	}
	return put(b, "zone", z.Name, z)
}

// assignZoneID checks a zone's explicit id, or gives it the first free id
// (owner, of either file, says which are taken) after the last one its
// file's zones bucket b handed out, wrapping from MaxZoneID to 1: the
// kernel holds no more, and a root sees far more zones over its life than
// that (every container without a zone annotation has one). Going round
// means an id comes back only after every other one was handed out since
// in that file. That is safe even then: deleting a zone removes its id's
// kernel policy, peers and counters (bpf's DeletePolicy), reconcile removes
// what a crash left, a new zone withdraws what other zones still grant its
// id (libzone's Enforcer.Claim) and its first push replaces its own entries
// before it has a member, and an event older than the zone that now has
// its id is not put under that zone's name (libzone's Drain).
func assignZoneID(b *bolt.Bucket, owner func(uint32) []byte, z *Zone) error {
	if z.ID != 0 {
		if z.ID > MaxZoneID {
			return fmt.Errorf("zone %q: kernel id %d is above the highest, %d", z.Name, z.ID, MaxZoneID)
		}
		if o := owner(z.ID); o != nil {
			return fmt.Errorf("zone %q: kernel id %d already belongs to zone %q", z.Name, z.ID, o)
		}
		return nil
	}
	for range MaxZoneID {
		seq, err := b.NextSequence()
		if err != nil {
			return fmt.Errorf("allocate zone id: %w", err)
		}
		id := uint32((seq-1)%MaxZoneID) + 1
		if owner(id) == nil {
			z.ID = id
			return nil
		}
	}
	return fmt.Errorf("allocate zone id: all %d zone ids are taken by zones of this root; delete the zones that are no longer needed ('rauha zone list')", MaxZoneID)
}

// DeleteZone removes a zone that has no member containers.
func (tx *Tx) DeleteZone(name string) error {
	z, implicit, err := tx.findZone(name)
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
	b, ids, err := tx.zoneBucketsToChange(implicit)
	if err != nil {
		return err
	}
	if err := ids.Delete(zoneIDKey(z.ID)); err != nil {
		return fmt.Errorf("zone %q: unindex kernel id %d: %w", name, z.ID, err)
	}
	return b.Delete([]byte(name))
}

// Zones returns all zones sorted by name.
func (tx *Tx) Zones() ([]Zone, error) {
	var out []Zone
	for _, implicit := range []bool{true, false} {
		zones, _ := tx.zoneBuckets(implicit)
		zs, err := list[Zone](zones, "zone", nil)
		if err != nil {
			return nil, err
		}
		out = append(out, zs...)
	}
	slices.SortFunc(out, func(a, b Zone) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// HasZones reports whether any zone exists, without decoding one.
func (tx *Tx) HasZones() bool {
	for _, implicit := range []bool{true, false} {
		if zones, _ := tx.zoneBuckets(implicit); zones != nil {
			if k, _ := zones.Cursor().First(); k != nil {
				return true
			}
		}
	}
	return false
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
	old, err := tx.Container(c.ID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	// A record that stays in its zone needs no look at the zones file: a
	// zone with members is not deleted.
	if old == nil || old.Zone != c.Zone {
		if _, err := tx.Zone(c.Zone); err != nil {
			return fmt.Errorf("container %q: %w (store the zone before its containers)", c.ID, err)
		}
	}
	if c.Created.IsZero() {
		c.Created = time.Now().UTC()
	}
	members, err := tx.writableBucket(bucketZoneMembers)
	if err != nil {
		return err
	}
	if old != nil {
		if err := members.Delete(memberKey(old.Zone, c.ID)); err != nil {
			return fmt.Errorf("container %q: unindex as member of zone %q: %w", c.ID, old.Zone, err)
		}
	}
	if err := members.Put(memberKey(c.Zone, c.ID), nil); err != nil {
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
	old, err := tx.Container(id)
	if err != nil {
		return err
	}
	members, err := tx.writableBucket(bucketZoneMembers)
	if err != nil {
		return err
	}
	if err := members.Delete(memberKey(old.Zone, id)); err != nil {
		return fmt.Errorf("container %q: unindex as member of zone %q: %w", id, old.Zone, err)
	}
	if err := tx.releaseLease(old); err != nil {
		return err
	}
	return b.Delete([]byte(id))
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

// DeleteMeta removes a meta value; one that was never set is no error.
// It writes only when the value exists, so a transaction that finds nothing
// to delete leaves the zones file as it was.
func (tx *Tx) DeleteMeta(key string) error {
	if err := checkMetaKey(key); err != nil {
		return err
	}
	if v, err := tx.Meta(key); err != nil || v == "" {
		return err
	}
	b, err := tx.writableBucket(bucketMeta)
	if err != nil {
		return err
	}
	return b.Delete([]byte(key))
}

// checkMetaKey refuses the keys a caller may not change: the schema
// version belongs to the store.
func checkMetaKey(key string) error {
	if key == MetaSchemaVersion || key == "" {
		return fmt.Errorf("meta key %q cannot be changed", key)
	}
	return nil
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
	if err := checkMetaKey(key); err != nil {
		return err
	}
	b, err := tx.writableBucket(bucketMeta)
	if err != nil {
		return err
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
