package zone

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// The test binary doubles as a concurrent store writer for the multi-process
// test: re-executed with helperEnv set, it runs storeWriter instead of tests.
const helperEnv = "RAUHA_ZONE_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "store-writer":
		if err := storeWriter(os.Args[1], os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "event-writer":
		if err := eventWriter(os.Args[1], os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

func runHelper(t *testing.T, kind string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+kind)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// storeWriter adds n containers (and a zone per writer) in separate Updates,
// each a read-modify-write of a shared counter so that lost updates show.
func storeWriter(root, prefix, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil {
		return err
	}
	s := OpenStore(root).WithLockTimeout(time.Minute)
	return writeRecords(s, prefix, n)
}

func writeRecords(s *Store, prefix string, n int) error {
	if err := s.Update(func(tx *Tx) error {
		return tx.PutZone(&Zone{Name: prefix, Policy: *mustPreset("standard")})
	}); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		err := s.Update(func(tx *Tx) error {
			v, err := tx.Meta("counter")
			if err != nil {
				return err
			}
			c, _ := strconv.Atoi(v)
			if err := tx.SetMeta("counter", strconv.Itoa(c+1)); err != nil {
				return err
			}
			return tx.PutContainer(&Container{ID: fmt.Sprintf("%s-%d", prefix, i), Zone: prefix, Status: "created"})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func mustPreset(name string) *Policy {
	p, err := Preset(name)
	if err != nil {
		panic(err)
	}
	return p
}

func TestStoreZonesAndContainers(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	s := OpenStore(root)
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("OpenStore touched the file system")
	}
	var web, db Zone
	err := s.Update(func(tx *Tx) error {
		web = Zone{Name: "web", Policy: *mustPreset("standard"), PolicySource: "preset:standard", Implicit: true}
		db = Zone{Name: "db", Policy: *mustPreset("strict"), PolicySource: "preset:strict"}
		if err := tx.PutZone(&web); err != nil {
			return err
		}
		if err := tx.PutZone(&db); err != nil {
			return err
		}
		return tx.PutContainer(&Container{ID: "c1", Zone: "web", Bundle: "/b", CgroupPath: "/rauha/c1", CgroupID: 42, Pid: 7, Status: "created"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if web.ID == 0 || db.ID == 0 || web.ID == db.ID {
		t.Fatalf("zone ids not allocated uniquely: %d %d", web.ID, db.ID)
	}
	if web.Generation != 1 || web.Created.IsZero() {
		t.Fatalf("new zone: generation %d created %v", web.Generation, web.Created)
	}
	st, err := os.Stat(root)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("root dir: %v %v", st.Mode(), err)
	}
	st, err = os.Stat(s.Path())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("db file: %v %v", st, err)
	}

	err = s.View(func(tx *Tx) error {
		z, err := tx.Zone("web")
		if err != nil {
			return err
		}
		if z.ID != web.ID || !z.Implicit || z.PolicySource != "preset:standard" || !z.Policy.Equal(mustPreset("standard")) || !z.Created.Equal(web.Created) {
			return fmt.Errorf("zone read back as %+v", z)
		}
		zones, err := tx.Zones()
		if err != nil || len(zones) != 2 || zones[0].Name != "db" || zones[1].Name != "web" {
			return fmt.Errorf("Zones = %v, %v", zones, err)
		}
		c, err := tx.Container("c1")
		if err != nil || c.CgroupID != 42 || c.Zone != "web" || c.Pid != 7 || c.Created.IsZero() {
			return fmt.Errorf("container = %+v, %v", c, err)
		}
		m, err := tx.Members("web")
		if err != nil || len(m) != 1 {
			return fmt.Errorf("Members(web) = %v, %v", m, err)
		}
		if m, err := tx.Members("db"); err != nil || len(m) != 0 {
			return fmt.Errorf("Members(db) = %v, %v", m, err)
		}
		if _, err := tx.Zone("nope"); !errors.Is(err, ErrNotFound) || err.Error() != `zone "nope": not found` {
			return fmt.Errorf("missing zone error = %v", err)
		}
		if _, err := tx.Container("nope"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("missing container error = %v", err)
		}
		if err := tx.PutZone(&Zone{Name: "x", Policy: *mustPreset("strict")}); err == nil {
			return errors.New("PutZone worked in a read-only transaction")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Policy changes bump the generation; rewriting the same policy does not.
	err = s.Update(func(tx *Tx) error {
		same := Zone{Name: "web", Policy: *mustPreset("standard")}
		if err := tx.PutZone(&same); err != nil {
			return err
		}
		if same.Generation != 1 || same.ID != web.ID || !same.Created.Equal(web.Created) {
			return fmt.Errorf("unchanged policy: %+v", same)
		}
		changed := Zone{Name: "web", Policy: *mustPreset("strict")}
		if err := tx.PutZone(&changed); err != nil {
			return err
		}
		if changed.Generation != 2 || changed.ID != web.ID {
			return fmt.Errorf("changed policy: %+v", changed)
		}
		moved := Zone{Name: "web", ID: web.ID + 100, Policy: *mustPreset("strict")}
		if err := tx.PutZone(&moved); err == nil {
			return errors.New("PutZone changed a zone's kernel id")
		}
		clash := Zone{Name: "other", ID: db.ID, Policy: *mustPreset("strict")}
		if err := tx.PutZone(&clash); err == nil || !strings.Contains(err.Error(), `already belongs to zone "db"`) {
			return fmt.Errorf("duplicate id error = %v", err)
		}
		if err := tx.PutZone(&Zone{Name: "../x", Policy: *mustPreset("strict")}); err == nil {
			return errors.New("PutZone accepted a bad name")
		}
		if err := tx.PutZone(&Zone{Name: "y"}); err == nil || !strings.Contains(err.Error(), "invalid policy") {
			return fmt.Errorf("invalid policy error = %v", err)
		}
		if err := tx.PutContainer(&Container{ID: "c2", Zone: "ghost"}); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("container in a missing zone: %v", err)
		}
		if err := tx.PutContainer(&Container{ID: "a/b", Zone: "web"}); err == nil {
			return errors.New("PutContainer accepted a bad id")
		}
		if err := tx.DeleteZone("web"); err == nil || !strings.Contains(err.Error(), "c1") {
			return fmt.Errorf("deleting a zone with members: %v", err)
		}
		if err := tx.DeleteContainer("c1"); err != nil {
			return err
		}
		if err := tx.DeleteContainer("c1"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("second delete: %v", err)
		}
		if err := tx.DeleteZone("web"); err != nil {
			return err
		}
		if err := tx.DeleteZone("web"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("second zone delete: %v", err)
		}
		// IDs are never reused, so stale kernel entries cannot name a new zone.
		again := Zone{Name: "web", Policy: *mustPreset("standard")}
		if err := tx.PutZone(&again); err != nil {
			return err
		}
		if again.ID == web.ID || again.ID == db.ID {
			return fmt.Errorf("zone id %d reused", again.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// HasZones follows the zones bucket: true with one zone, false again once
// the last one is deleted (what drops a root's kernel programs).
func TestStoreHasZones(t *testing.T) {
	s := OpenStore(t.TempDir())
	has := func() bool {
		var h bool
		if err := s.View(func(tx *Tx) error { h = tx.HasZones(); return nil }); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if err := s.Update(func(tx *Tx) error { return tx.SetMeta("test_key", "x") }); err != nil {
		t.Fatal(err)
	}
	if has() {
		t.Fatal("HasZones on a database without zones")
	}
	if err := s.Update(func(tx *Tx) error { return tx.PutZone(&Zone{Name: "z", Policy: *mustPreset("strict")}) }); err != nil {
		t.Fatal(err)
	}
	if !has() {
		t.Fatal("HasZones false with a zone")
	}
	if err := s.Update(func(tx *Tx) error { return tx.DeleteZone("z") }); err != nil {
		t.Fatal(err)
	}
	if has() {
		t.Fatal("HasZones true after the last zone was deleted")
	}
}

func TestStoreUpdateRollsBack(t *testing.T) {
	s := OpenStore(t.TempDir())
	boom := errors.New("boom")
	err := s.Update(func(tx *Tx) error {
		if err := tx.PutZone(&Zone{Name: "z", Policy: *mustPreset("strict")}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v", err)
	}
	err = s.View(func(tx *Tx) error {
		if _, err := tx.Zone("z"); !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("failed transaction was committed: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreMeta(t *testing.T) {
	s := OpenStore(t.TempDir())
	err := s.Update(func(tx *Tx) error {
		if v, err := tx.Meta(MetaSchemaVersion); err != nil || v != strconv.Itoa(SchemaVersion) {
			return fmt.Errorf("schema version %q, %v", v, err)
		}
		if v, err := tx.Meta("test_key"); err != nil || v != "" {
			return fmt.Errorf("unset meta = %q, %v", v, err)
		}
		if err := tx.SetMeta(MetaSchemaVersion, "9"); err == nil {
			return errors.New("SetMeta changed the schema version")
		}
		if err := tx.SetMeta("test_key", "abc"); err != nil {
			return err
		}
		return tx.SetMeta("generation_of_test", "3")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *Tx) error {
		if v, _ := tx.Meta("test_key"); v != "abc" {
			return fmt.Errorf("boot id = %q", v)
		}
		if v, _ := tx.Meta("generation_of_test"); v != "3" {
			return fmt.Errorf("generation = %q", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// `rauha list` on a fresh root must not write anything.
func TestStoreViewMissingCreatesNothing(t *testing.T) {
	for _, sub := range []string{"missing-root", ""} {
		root := filepath.Join(t.TempDir(), sub)
		s := OpenStore(root)
		err := s.View(func(tx *Tx) error {
			zones, err := tx.Zones()
			if err != nil || len(zones) != 0 {
				return fmt.Errorf("Zones = %v, %v", zones, err)
			}
			cs, err := tx.Containers()
			if err != nil || len(cs) != 0 {
				return fmt.Errorf("Containers = %v, %v", cs, err)
			}
			if m, err := tx.Members("x"); err != nil || len(m) != 0 {
				return fmt.Errorf("Members = %v, %v", m, err)
			}
			if _, err := tx.Zone("x"); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("Zone = %v", err)
			}
			if tx.HasZones() {
				return errors.New("HasZones on a missing database")
			}
			if _, err := tx.Container("x"); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("Container = %v", err)
			}
			if v, err := tx.Meta("test_key"); v != "" || err != nil {
				return fmt.Errorf("Meta = %q, %v", v, err)
			}
			if err := tx.SetMeta("k", "v"); err == nil {
				return errors.New("SetMeta in View succeeded")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if sub != "" {
			if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("View created %s", root)
			}
		} else if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Fatalf("View created files: %v", entries)
		}
	}
}

// A zero-length file is what a concurrent first Update leaves for an instant.
func TestStoreViewEmptyFile(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, DBName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := OpenStore(root).View(func(tx *Tx) error { _, err := tx.Zones(); return err }); err != nil {
		t.Fatal(err)
	}
}

func TestStoreRefusesNewerSchema(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, DBName)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put([]byte(MetaSchemaVersion), []byte(strconv.Itoa(SchemaVersion+1)))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	want := fmt.Sprintf("state database %s has schema version %d, but this rauha understands only up to %d: use the newer rauha binary that wrote it, or a different --root", path, SchemaVersion+1, SchemaVersion)
	s := OpenStore(root)
	readZones := func(tx *Tx) error {
		if _, err := tx.Zones(); err != nil {
			return err
		}
		return errors.New("fn went on")
	}
	err = s.View(readZones)
	if err == nil || err.Error() != want {
		t.Fatalf("View error = %v", err)
	}
	err = s.Update(readZones)
	if err == nil || err.Error() != want {
		t.Fatalf("Update error = %v", err)
	}
}

// A schema 1 database (no indexes) is read as it is and migrated by the
// first Update: the indexes then give the same members and keep the old
// zone ids taken.
func TestStoreMigratesSchema1(t *testing.T) {
	root := t.TempDir()
	writeDB(t, filepath.Join(root, DBName), func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		zones, err := tx.CreateBucket(bucketZones)
		if err != nil {
			return err
		}
		cs, err := tx.CreateBucket(bucketContainers)
		if err != nil {
			return err
		}
		if err := zones.SetSequence(7); err != nil {
			return err
		}
		for _, z := range []Zone{{Name: "a", ID: 7, Policy: *mustPreset("standard")}, {Name: "b", ID: 8, Policy: *mustPreset("strict")}} {
			if err := put(zones, "zone", z.Name, &z); err != nil {
				return err
			}
		}
		for _, c := range []Container{{ID: "c2", Zone: "a"}, {ID: "c1", Zone: "a"}, {ID: "c3", Zone: "b"}} {
			if err := put(cs, "container", c.ID, &c); err != nil {
				return err
			}
		}
		return meta.Put([]byte(MetaSchemaVersion), []byte("1"))
	})
	s := OpenStore(root)
	memberIDs := func(tx *Tx, zone string) string {
		m, err := tx.Members(zone)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range m {
			ids = append(ids, c.ID)
		}
		return strings.Join(ids, ",")
	}
	if err := s.View(func(tx *Tx) error {
		if got := memberIDs(tx, "a"); got != "c1,c2" {
			return fmt.Errorf("schema 1 members of a = %q", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err := s.Update(func(tx *Tx) error {
		if v, _ := tx.Meta(MetaSchemaVersion); v != strconv.Itoa(SchemaVersion) {
			return fmt.Errorf("schema version after Update = %q", v)
		}
		n := 0
		if err := tx.bucket(bucketZoneMembers).ForEach(func(_, _ []byte) error { n++; return nil }); err != nil || n != 3 {
			return fmt.Errorf("member index holds %d entries (%v), want 3", n, err)
		}
		if got := memberIDs(tx, "a"); got != "c1,c2" {
			return fmt.Errorf("migrated members of a = %q", got)
		}
		if got := memberIDs(tx, "b"); got != "c3" {
			return fmt.Errorf("migrated members of b = %q", got)
		}
		taken := &Zone{Name: "c", ID: 8, Policy: *mustPreset("standard")}
		if err := tx.PutZone(taken); err == nil || !strings.Contains(err.Error(), `kernel id 8 already belongs to zone "b"`) {
			return fmt.Errorf("PutZone with the id of b: %v", err)
		}
		fresh := &Zone{Name: "c", Policy: *mustPreset("standard")}
		if err := tx.PutZone(fresh); err != nil {
			return err
		}
		if fresh.ID != 9 {
			return fmt.Errorf("new zone got id %d, want 9 (7 and 8 are taken)", fresh.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The indexes follow every change: a container moved to another zone, a
// deleted container, a deleted zone whose id becomes free for an explicit
// reuse.
func TestStoreIndexesFollowChanges(t *testing.T) {
	s := OpenStore(t.TempDir())
	count := func(tx *Tx, zone string) int {
		m, err := tx.Members(zone)
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	err := s.Update(func(tx *Tx) error {
		a := &Zone{Name: "a", Policy: *mustPreset("standard")}
		b := &Zone{Name: "ab", Policy: *mustPreset("standard")}
		for _, z := range []*Zone{a, b} {
			if err := tx.PutZone(z); err != nil {
				return err
			}
		}
		if err := tx.PutContainer(&Container{ID: "x", Zone: "a"}); err != nil {
			return err
		}
		if err := tx.PutContainer(&Container{ID: "y", Zone: "ab"}); err != nil {
			return err
		}
		// "a" is a prefix of "ab": the NUL keeps their members apart.
		if count(tx, "a") != 1 || count(tx, "ab") != 1 {
			return fmt.Errorf("members a=%d ab=%d, want 1 and 1", count(tx, "a"), count(tx, "ab"))
		}
		if err := tx.PutContainer(&Container{ID: "x", Zone: "ab"}); err != nil {
			return err
		}
		if count(tx, "a") != 0 || count(tx, "ab") != 2 {
			return fmt.Errorf("after the move: members a=%d ab=%d, want 0 and 2", count(tx, "a"), count(tx, "ab"))
		}
		if err := tx.DeleteZone("ab"); err == nil {
			return errors.New("DeleteZone removed a zone with members")
		}
		for _, id := range []string{"x", "y"} {
			if err := tx.DeleteContainer(id); err != nil {
				return err
			}
		}
		if count(tx, "ab") != 0 {
			return errors.New("deleted containers are still members")
		}
		if err := tx.DeleteZone("ab"); err != nil {
			return err
		}
		again := &Zone{Name: "other", ID: b.ID, Policy: *mustPreset("standard")}
		if err := tx.PutZone(again); err != nil {
			return fmt.Errorf("the id of a deleted zone is still taken: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreLockTimeout(t *testing.T) {
	root := t.TempDir()
	s := OpenStore(root)
	if err := s.Update(func(tx *Tx) error { return tx.PutZone(&Zone{Name: "z", Policy: *mustPreset("standard")}) }); err != nil {
		t.Fatal(err)
	}
	short := s.WithLockTimeout(200 * time.Millisecond)
	readZones := func(tx *Tx) error { _, err := tx.Zones(); return err }
	// Hold the root lock the way another rauha process would, then bbolt's
	// file lock the way another program with the database open would.
	for _, held := range []string{root, s.Path()} {
		f, err := os.Open(held)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		for name, op := range map[string]func(func(*Tx) error) error{"Update": short.Update, "View": short.View} {
			start := time.Now()
			err := op(readZones)
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("%s with %s locked: error = %v, want ErrLocked", name, held, err)
			}
			if waited := time.Since(start); waited < 100*time.Millisecond || waited > 5*time.Second {
				t.Fatalf("%s waited %v for a 200ms timeout", name, waited)
			}
			msg := err.Error()
			wantHolder := fmt.Sprintf("pid %d (", os.Getpid())
			if !strings.Contains(msg, s.Path()) || !strings.Contains(msg, wantHolder) || !strings.Contains(msg, "retry") || strings.Contains(msg, "timeout") {
				t.Fatalf("%s error %q must name the file, the holder (%s...) and say to retry, without a bare timeout", name, msg, wantHolder)
			}
		}
		f.Close() // releases the lock
		if err := short.View(readZones); err != nil {
			t.Fatalf("after unlock: %v", err)
		}
	}
}

func checkRecords(t *testing.T, s *Store, prefixes []string, n int) {
	t.Helper()
	err := s.View(func(tx *Tx) error {
		cs, err := tx.Containers()
		if err != nil {
			return err
		}
		if len(cs) != len(prefixes)*n {
			return fmt.Errorf("%d containers, want %d", len(cs), len(prefixes)*n)
		}
		v, _ := tx.Meta("counter")
		if v != strconv.Itoa(len(prefixes)*n) {
			return fmt.Errorf("counter = %s, want %d: updates were lost", v, len(prefixes)*n)
		}
		zones, err := tx.Zones()
		if err != nil {
			return err
		}
		ids := map[uint32]bool{}
		for _, z := range zones {
			if ids[z.ID] {
				return fmt.Errorf("zone id %d allocated twice", z.ID)
			}
			ids[z.ID] = true
		}
		if len(zones) != len(prefixes) {
			return fmt.Errorf("%d zones, want %d", len(zones), len(prefixes))
		}
		for _, p := range prefixes {
			m, err := tx.Members(p)
			if err != nil || len(m) != n {
				return fmt.Errorf("zone %s has %d members (%v), want %d", p, len(m), err, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreConcurrentGoroutines(t *testing.T) {
	root := t.TempDir()
	const goroutines, n = 16, 10
	var prefixes []string
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	for g := 0; g < goroutines; g++ {
		prefix := fmt.Sprintf("g%d", g)
		prefixes = append(prefixes, prefix)
		// Half share a Store, half bring their own, as separate commands
		// in one process would: both must serialize.
		s := OpenStore(root)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeRecords(s, prefix, n)
		}()
	}
	shared := OpenStore(root)
	for g := 0; g < goroutines; g++ {
		prefix := fmt.Sprintf("s%d", g)
		prefixes = append(prefixes, prefix)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeRecords(shared, prefix, n)
		}()
	}
	// Readers run alongside the writers.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := OpenStore(root).View(func(tx *Tx) error { _, err := tx.Containers(); return err }); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond) // a process polling state, not a spin
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkRecords(t, OpenStore(root), prefixes, n)
}

func TestStoreConcurrentProcesses(t *testing.T) {
	root := t.TempDir()
	const procs, n = 4, 15
	var cmds []*exec.Cmd
	var prefixes []string
	for p := 0; p < procs; p++ {
		prefix := fmt.Sprintf("p%d", p)
		prefixes = append(prefixes, prefix)
		cmds = append(cmds, runHelper(t, "store-writer", root, prefix, strconv.Itoa(n)))
	}
	// This process writes at the same time.
	prefixes = append(prefixes, "self")
	if err := writeRecords(OpenStore(root).WithLockTimeout(time.Minute), "self", n); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	checkRecords(t, OpenStore(root), prefixes, n)
}

// Zone ids stay within the kernel's maps however many zones a root has seen:
// a new zone takes the next free id after the last one handed out, wrapping
// from MaxZoneID to 1 and skipping ids that live zones hold; with every id
// taken, PutZone says so, and an explicit id above MaxZoneID is refused.
func TestStoreZoneIDsWrap(t *testing.T) {
	s := OpenStore(t.TempDir())
	err := s.Update(func(tx *Tx) error {
		keep := &Zone{Name: "keep", Policy: *mustPreset("strict")}
		if err := tx.PutZone(keep); err != nil {
			return err
		}
		last, wrapped := keep.ID, false
		for i := range 3 * MaxZoneID {
			z := &Zone{Name: fmt.Sprintf("z%d", i), Policy: *mustPreset("standard")}
			if err := tx.PutZone(z); err != nil {
				return fmt.Errorf("zone %d of a churning root: %w", i, err)
			}
			want := last%MaxZoneID + 1
			if want == keep.ID {
				want = want%MaxZoneID + 1
			}
			if z.ID != want {
				return fmt.Errorf("zone %d got id %d after %d, want %d (the next free one)", i, z.ID, last, want)
			}
			wrapped = wrapped || z.ID < last
			last = z.ID
			if err := tx.DeleteZone(z.Name); err != nil {
				return err
			}
		}
		if !wrapped {
			return errors.New("the ids never wrapped")
		}
		for i := range MaxZoneID - 1 {
			if err := tx.PutZone(&Zone{Name: fmt.Sprintf("full%d", i), Policy: *mustPreset("standard")}); err != nil {
				return fmt.Errorf("zone %d of %d: %w", i+2, MaxZoneID, err)
			}
		}
		err := tx.PutZone(&Zone{Name: "one-too-many", Policy: *mustPreset("standard")})
		want := fmt.Sprintf(`allocate zone id: all %d zone ids are taken by zones of this root; delete the zones that are no longer needed ('rauha zone list')`, MaxZoneID)
		if err == nil || err.Error() != want {
			return fmt.Errorf("PutZone with every id taken: %v, want %q", err, want)
		}
		freed, err := tx.Zone("full500")
		if err != nil {
			return err
		}
		if err := tx.DeleteZone("full500"); err != nil {
			return err
		}
		late := &Zone{Name: "late", Policy: *mustPreset("standard")}
		if err := tx.PutZone(late); err != nil {
			return err
		}
		if late.ID != freed.ID {
			return fmt.Errorf("the only free id is %d, the new zone got %d", freed.ID, late.ID)
		}
		high := &Zone{Name: "high", ID: MaxZoneID + 1, Policy: *mustPreset("standard")}
		if err := tx.PutZone(high); err == nil || !strings.Contains(err.Error(), "kernel id 1024 is above the highest, 1023") {
			return fmt.Errorf("PutZone with id %d: %v", high.ID, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A schema 2 database from a root that had seen more than MaxZoneID zones
// holds zones with ids the kernel refused; the first Update gives them free
// ids in range and keeps the others.
func TestStoreMigratesIDsAboveMax(t *testing.T) {
	root := t.TempDir()
	s := OpenStore(root)
	if err := s.Update(func(tx *Tx) error {
		return tx.PutZone(&Zone{Name: "low", ID: 7, Policy: *mustPreset("standard")})
	}); err != nil {
		t.Fatal(err)
	}
	writeDB(t, filepath.Join(root, DBName), func(tx *bolt.Tx) error {
		zones := tx.Bucket(bucketZones)
		if err := zones.SetSequence(1600); err != nil {
			return err
		}
		high := Zone{Name: "high", ID: 1522, Policy: *mustPreset("strict")}
		if err := put(zones, "zone", high.Name, &high); err != nil {
			return err
		}
		if err := tx.Bucket(bucketZoneIDs).Put(zoneIDKey(high.ID), []byte(high.Name)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put([]byte(MetaSchemaVersion), []byte("2"))
	})
	err := s.Update(func(tx *Tx) error {
		if v, _ := tx.Meta(MetaSchemaVersion); v != strconv.Itoa(SchemaVersion) {
			return fmt.Errorf("schema version after Update = %q", v)
		}
		low, err := tx.Zone("low")
		if err != nil {
			return err
		}
		high, err := tx.Zone("high")
		if err != nil {
			return err
		}
		if low.ID != 7 || high.ID < 1 || high.ID > MaxZoneID || high.ID == 7 {
			return fmt.Errorf("ids after migration: low %d, high %d; want 7 and a free id in 1..%d", low.ID, high.ID, MaxZoneID)
		}
		if owner := tx.bucket(bucketZoneIDs).Get(zoneIDKey(1522)); owner != nil {
			return fmt.Errorf("id 1522 is still indexed, to %q", owner)
		}
		if owner := tx.bucket(bucketZoneIDs).Get(zoneIDKey(high.ID)); string(owner) != "high" {
			return fmt.Errorf("id %d is indexed to %q, want high", high.ID, owner)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeDB writes a bbolt file by hand, as an older rauha left it.
func writeDB(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fileBuckets lists the top-level buckets of a bbolt file.
func fileBuckets(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names []string
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Containers live in a file of their boot: a store of another boot (after a
// reboot or a kernel crash) does not read them, and its first write of a
// container removes the old file. Named zones stay in rauha.db.
func TestStoreContainersFilePerBoot(t *testing.T) {
	root := t.TempDir()
	before := OpenStore(root)
	before.bootID = "boot-before"
	if err := before.Update(func(tx *Tx) error {
		return tx.PutZone(&Zone{Name: "z", Policy: *mustPreset("standard")})
	}); err != nil {
		t.Fatal(err)
	}
	if err := before.Update(func(tx *Tx) error {
		if err := tx.PutContainer(&Container{ID: "c1", Zone: "z", Status: "created"}); err != nil {
			return err
		}
		return tx.Lease(&Container{ID: "c1", Zone: "z"}, "", func(netip.Prefix) bool { return false })
	}); err != nil {
		t.Fatal(err)
	}
	oldFile := filepath.Join(root, "containers-boot-before.db")
	if got := strings.Join(fileBuckets(t, oldFile), ","); got != "containers,leases,meta,ports,subnets,subnets6,zone_ids,zone_members,zones" {
		t.Fatalf("containers file buckets = %s", got)
	}
	if got := strings.Join(fileBuckets(t, before.Path()), ","); got != "meta,subnets,subnets6,zone_ids,zones" {
		t.Fatalf("rauha.db buckets = %s", got)
	}

	after := OpenStore(root)
	after.bootID = "boot-after"
	if err := after.View(func(tx *Tx) error {
		if cs, err := tx.Containers(); err != nil || len(cs) != 0 {
			return fmt.Errorf("containers of the earlier boot read: %v, %v", cs, err)
		}
		if _, err := tx.Zone("z"); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(oldFile); err != nil {
		t.Fatalf("a View removed the earlier boot's file: %v", err)
	}
	if err := after.Update(func(tx *Tx) error {
		return tx.PutContainer(&Container{ID: "c2", Zone: "z", Status: "created"})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(oldFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the earlier boot's containers file is still there: %v", err)
	}
	if err := after.View(func(tx *Tx) error {
		m, err := tx.Members("z")
		if err != nil || len(m) != 1 || m[0].ID != "c2" {
			return fmt.Errorf("members of z = %v, %v; want c2 alone", m, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Storing a record again in the same zone (create's created mark) and
// reading one (delete) do not open rauha.db: they go on while another
// program holds its file lock. A record for another zone does open it.
func TestStoreContainerWritesLeaveZonesFile(t *testing.T) {
	root := t.TempDir()
	s := OpenStore(root)
	if err := s.Update(func(tx *Tx) error {
		for _, name := range []string{"a", "b"} {
			if err := tx.PutZone(&Zone{Name: name, Policy: *mustPreset("standard")}); err != nil {
				return err
			}
		}
		return tx.PutContainer(&Container{ID: "c", Zone: "a", Status: "creating"})
	}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	short := s.WithLockTimeout(200 * time.Millisecond)
	if err := short.Update(func(tx *Tx) error {
		return tx.PutContainer(&Container{ID: "c", Zone: "a", Status: "created", Pid: 42})
	}); err != nil {
		t.Fatalf("mark a record created: %v", err)
	}
	if err := short.View(func(tx *Tx) error {
		c, err := tx.Container("c")
		if err == nil && (c.Status != "created" || c.Pid != 42) {
			err = fmt.Errorf("record = %+v", c)
		}
		return err
	}); err != nil {
		t.Fatalf("read a record: %v", err)
	}
	err = short.Update(func(tx *Tx) error {
		return tx.PutContainer(&Container{ID: "c", Zone: "b", Status: "created"})
	})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("moving a record to another zone did not look the zone up: %v", err)
	}
}

// A schema 3 database (containers in rauha.db) is read as it is and
// migrated by the first Update that opens it: the records, the member
// index, leases and ports move to the containers file, nothing is lost.
func TestStoreMigratesSchema3(t *testing.T) {
	root := t.TempDir()
	writeDB(t, filepath.Join(root, DBName), func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketZones, bucketZoneIDs, bucketSubnets, bucketSubnets6, bucketContainers, bucketZoneMembers, bucketLeases, bucketPorts} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		z := Zone{Name: "z", ID: 3, Policy: *mustPreset("standard")}
		if err := put(tx.Bucket(bucketZones), "zone", z.Name, &z); err != nil {
			return err
		}
		if err := tx.Bucket(bucketZoneIDs).Put(zoneIDKey(3), []byte("z")); err != nil {
			return err
		}
		c := Container{ID: "c", Zone: "z", Status: "created", Ports: []Port{{Protocol: "tcp", HostPort: 8080, ContainerPort: 80}}}
		if err := put(tx.Bucket(bucketContainers), "container", c.ID, &c); err != nil {
			return err
		}
		if err := tx.Bucket(bucketZoneMembers).Put(memberKey("z", "c"), nil); err != nil {
			return err
		}
		if err := tx.Bucket(bucketLeases).Put([]byte("z\x00lease"), []byte("c")); err != nil {
			return err
		}
		if err := tx.Bucket(bucketPorts).Put([]byte("tcp/8080"), []byte("c")); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put([]byte(MetaSchemaVersion), []byte("3"))
	})
	s := OpenStore(root)
	s.bootID = "boot-now"
	check := func(tx *Tx) error {
		m, err := tx.Members("z")
		if err != nil || len(m) != 1 || m[0].ID != "c" || len(m[0].Ports) != 1 {
			return fmt.Errorf("members of z = %v, %v", m, err)
		}
		if got := string(tx.bucket(bucketLeases).Get([]byte("z\x00lease"))); got != "c" {
			return fmt.Errorf("lease holder = %q", got)
		}
		if got := string(tx.bucket(bucketPorts).Get([]byte("tcp/8080"))); got != "c" {
			return fmt.Errorf("port holder = %q", got)
		}
		return nil
	}
	if err := s.View(check); err != nil {
		t.Fatalf("schema 3 read: %v", err)
	}
	if err := s.Update(func(tx *Tx) error {
		return tx.PutZone(&Zone{Name: "other", Policy: *mustPreset("strict")})
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fileBuckets(t, s.Path()), ","); got != "meta,subnets,subnets6,zone_ids,zones" {
		t.Fatalf("rauha.db buckets after the migration = %s", got)
	}
	if err := s.View(func(tx *Tx) error {
		if v, _ := tx.Meta(MetaSchemaVersion); v != strconv.Itoa(SchemaVersion) {
			return fmt.Errorf("schema version = %q", v)
		}
		return check(tx)
	}); err != nil {
		t.Fatalf("after the migration: %v", err)
	}
}

// A zone made for one container is stored beside it in the containers file,
// with its subnet: creating and deleting both, a lease included, commits
// nothing to rauha.db (no synced write), names and kernel ids stay unique
// across the two files, and the zone goes with its boot.
func TestStoreImplicitZonesInContainersFile(t *testing.T) {
	root := t.TempDir()
	s := OpenStore(root)
	s.bootID = "boot-one"
	named := &Zone{Name: "named", Policy: *mustPreset("strict")}
	if err := s.Update(func(tx *Tx) error { return tx.PutZone(named) }); err != nil {
		t.Fatal(err)
	}
	// Every bbolt commit rewrites a meta page, so an unchanged file was
	// not committed to.
	before, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	own := &Zone{Name: "c1", Implicit: true, Policy: *mustPreset("standard")}
	if err := s.Update(func(tx *Tx) error {
		if err := tx.PutZone(own); err != nil {
			return err
		}
		c := &Container{ID: "c1", Zone: "c1", Status: "creating"}
		if err := tx.Lease(c, "", func(netip.Prefix) bool { return false }); err != nil {
			return err
		}
		return tx.PutContainer(c)
	}); err != nil {
		t.Fatal(err)
	}
	if own.ID == named.ID || own.ID == 0 {
		t.Fatalf("implicit zone id %d, named zone id %d", own.ID, named.ID)
	}
	err = s.Update(func(tx *Tx) error {
		zs, err := tx.Zones()
		if err != nil {
			return err
		}
		if len(zs) != 2 || zs[0].Name != "c1" || zs[1].Name != "named" || !zs[0].Implicit {
			return fmt.Errorf("zones = %+v", zs)
		}
		if _, ok := tx.Subnets()["c1"]; !ok {
			return fmt.Errorf("subnets = %v, without the implicit zone's", tx.Subnets())
		}
		if err := tx.PutZone(&Zone{Name: "c1", Policy: *mustPreset("strict")}); err != nil {
			return err // an update of the implicit zone's policy stays beside it
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx *Tx) error {
		return tx.PutZone(&Zone{Name: "x", ID: own.ID, Policy: *mustPreset("standard")})
	})
	if err == nil || !strings.Contains(err.Error(), `already belongs to zone "c1"`) {
		t.Fatalf("a named zone took the implicit zone's id: %v", err)
	}
	if err := s.Update(func(tx *Tx) error {
		if err := tx.DeleteContainer("c1"); err != nil {
			return err
		}
		return tx.DeleteZone("c1")
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.View(func(tx *Tx) error {
		if len(tx.Subnets()) != 0 {
			return fmt.Errorf("subnets left: %v", tx.Subnets())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(s.Path()); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("rauha.db was written for a zone of one container (%v)", err)
	}
	if err := s.Update(func(tx *Tx) error {
		if err := tx.PutZone(&Zone{Name: "c2", Implicit: true, Policy: *mustPreset("standard")}); err != nil {
			return err
		}
		_, err := tx.RecordObservations("c2", []Observation{{Kind: "exec", Object: "/bin/sh", Count: 1}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	next := OpenStore(root)
	next.bootID = "boot-two"
	if err := next.View(func(tx *Tx) error {
		zs, err := tx.Zones()
		if err != nil || len(zs) != 1 || zs[0].Name != "named" {
			return fmt.Errorf("zones in the next boot = %+v, %v; want named alone", zs, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A new zone of the same name does not inherit the earlier one's
	// recording, which rauha.db kept.
	if err := next.Update(func(tx *Tx) error {
		return tx.PutZone(&Zone{Name: "c2", Implicit: true, Policy: *mustPreset("standard")})
	}); err != nil {
		t.Fatal(err)
	}
	if err := next.View(func(tx *Tx) error {
		if obs, err := tx.Observations("c2"); err != nil || len(obs) != 0 {
			return fmt.Errorf("the new zone c2 has the old recording: %v, %v", obs, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// DeleteMeta removes a value, refuses the schema version, and commits
// nothing to rauha.db when the value was never set.
func TestStoreDeleteMeta(t *testing.T) {
	s := OpenStore(t.TempDir())
	if err := s.Update(func(tx *Tx) error { return tx.SetMeta("k", "v") }); err != nil {
		t.Fatal(err)
	}
	err := s.Update(func(tx *Tx) error {
		if err := tx.DeleteMeta(MetaSchemaVersion); err == nil {
			return errors.New("DeleteMeta removed the schema version")
		}
		return tx.DeleteMeta("k")
	})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx *Tx) error {
		if v, err := tx.Meta("k"); err != nil || v != "" {
			return fmt.Errorf("deleted meta = %q, %v", v, err)
		}
		if err := tx.DeleteMeta("never-set"); err != nil {
			return err
		}
		// a zone of one container and its record: the containers file
		return tx.PutZone(&Zone{Name: "c1", Implicit: true, Policy: *mustPreset("standard")})
	})
	if err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(s.Path()); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("deleting a meta value that was never set wrote rauha.db (%v)", err)
	}
}
