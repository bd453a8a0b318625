package zone

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// eventWriter appends count single-event batches to zone (see TestMain).
func eventWriter(root, zone, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil {
		return err
	}
	log := NewEventLog(root)
	if max := os.Getenv("RAUHA_TEST_MAXSIZE"); max != "" {
		m, _ := strconv.ParseInt(max, 10, 64)
		log = log.WithMaxSize(m)
	}
	for i := 0; i < n; i++ {
		if err := log.Append(zone, Event{Comm: fmt.Sprintf("pid%d", os.Getpid()), Pid: i, Control: "file_open", Decision: DecisionDeny}); err != nil {
			return err
		}
	}
	return nil
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func ev(i int) Event {
	return Event{Time: t0.Add(time.Duration(i) * time.Second), Pid: i, Comm: "sh", Control: "file_open",
		Decision: DecisionDeny, Object: "/etc/shadow", Backend: "landlock"}
}

func pids(evs []Event) []int {
	out := make([]int, len(evs))
	for i, e := range evs {
		out[i] = e.Pid
	}
	return out
}

func TestEventLogAppendRead(t *testing.T) {
	root := t.TempDir()
	l := NewEventLog(root)
	if evs, err := l.Read("web", time.Time{}); err != nil || evs != nil {
		t.Fatalf("Read before any append = %v, %v", evs, err)
	}
	if _, err := os.Stat(l.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Read created the events directory")
	}
	sig := ev(1)
	sig.Control, sig.TargetPid, sig.TargetZone = "task_kill", 99, "db"
	if err := l.Append("web", ev(0), sig, ev(2)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append("web", Event{Pid: 3}); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Read("web", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pids(evs)) != "[0 1 2 3]" {
		t.Fatalf("pids %v", pids(evs))
	}
	if evs[1] != (Event{Time: sig.Time, Zone: "web", Pid: 1, Comm: "sh", Control: "task_kill", Decision: DecisionDeny,
		Object: "/etc/shadow", Backend: "landlock", TargetPid: 99, TargetZone: "db"}) {
		t.Fatalf("event read back as %+v", evs[1])
	}
	if evs[3].Time.IsZero() || evs[3].Zone != "web" {
		t.Fatalf("Append did not fill time and zone: %+v", evs[3])
	}
	data, _ := os.ReadFile(filepath.Join(l.Dir(), "web.jsonl"))
	first := strings.SplitN(string(data), "\n", 2)[0]
	if strings.Contains(first, "target_pid") || !strings.Contains(first, `"decision":"deny"`) || !strings.HasPrefix(first, `{"time":"2025-01-02T03:04:05Z","zone":"web"`) {
		t.Fatalf("JSON line %s", first)
	}
	if st, _ := os.Stat(filepath.Join(l.Dir(), "web.jsonl")); st.Mode().Perm() != 0o600 {
		t.Fatalf("event file mode %v", st.Mode())
	}

	evs, err = l.Read("web", t0.Add(2*time.Second))
	if err != nil || fmt.Sprint(pids(evs)) != "[2 3]" {
		t.Fatalf("Read since = %v, %v", pids(evs), err)
	}
	if err := l.Append("web", Event{Zone: "db"}); err == nil {
		t.Fatal("Append accepted an event of another zone")
	}
	if err := l.Append("../x", ev(0)); err == nil {
		t.Fatal("Append accepted a bad zone name")
	}
	if _, err := l.Read("a/b", time.Time{}); err == nil {
		t.Fatal("Read accepted a bad zone name")
	}
	if err := l.Append("web"); err != nil {
		t.Fatal(err)
	}
}

func TestEventLogAllZonesMerged(t *testing.T) {
	l := NewEventLog(t.TempDir())
	if err := l.Append("b", ev(1), ev(4)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append("a", ev(0), ev(2), ev(5)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append("c", ev(3)); err != nil {
		t.Fatal(err)
	}
	// Files that are not zone logs are ignored.
	os.WriteFile(filepath.Join(l.Dir(), "notes.txt"), []byte("x\n"), 0o600)
	evs, err := l.Read("", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pids(evs)) != "[0 1 2 3 4 5]" {
		t.Fatalf("merged pids %v", pids(evs))
	}
	if evs[0].Zone != "a" || evs[1].Zone != "b" || evs[3].Zone != "c" {
		t.Fatalf("zones %v", evs)
	}
}

func TestEventLogRotation(t *testing.T) {
	const max = 1000
	l := NewEventLog(t.TempDir()).WithMaxSize(max)
	const n = 60
	for i := 0; i < n; i++ {
		if err := l.Append("web", ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(l.Dir())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		info, _ := e.Info()
		if info.Size() > max+300 {
			t.Errorf("%s is %d bytes, limit %d", e.Name(), info.Size(), max)
		}
	}
	if fmt.Sprint(names) != "[web.jsonl web.jsonl.1]" {
		t.Fatalf("files %v, want the current and one old generation", names)
	}
	evs, err := l.Read("web", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || len(evs) >= n {
		t.Fatalf("%d events kept of %d, want a bounded suffix", len(evs), n)
	}
	// What is kept is the newest events, oldest first, without gaps.
	for i, e := range evs {
		if want := n - len(evs) + i; e.Pid != want {
			t.Fatalf("event %d has pid %d, want %d (all: %v)", i, e.Pid, want, pids(evs))
		}
	}
}

func TestEventLogMalformedLines(t *testing.T) {
	l := NewEventLog(t.TempDir())
	if err := l.Append("web", ev(0)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(l.Dir(), "web.jsonl")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n{\"time\":\"2025-") // a garbage line and a torn write
	f.Close()
	if err := l.Append("web", ev(1)); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Read("web", time.Time{})
	if !errors.Is(err, ErrMalformedEvents) || !strings.Contains(err.Error(), "2 in "+path) {
		t.Fatalf("Read error = %v, want 2 malformed lines reported", err)
	}
	if fmt.Sprint(pids(evs)) != "[0 1]" {
		t.Fatalf("good events %v: the torn line must not swallow the next append", pids(evs))
	}
}

func TestEventLogConcurrentProcesses(t *testing.T) {
	root := t.TempDir()
	const procs, n = 4, 50
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		cmds = append(cmds, runHelper(t, "event-writer", root, "web", strconv.Itoa(n)))
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := eventWriter(root, "web", strconv.Itoa(n)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := NewEventLog(root).Read("web", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != (procs+4)*n {
		t.Fatalf("%d events, want %d: appends were lost or torn", len(evs), (procs+4)*n)
	}
}

func TestEventLogConcurrentRotation(t *testing.T) {
	root := t.TempDir()
	const procs, n, max = 3, 100, 2000
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], root, "web", strconv.Itoa(n))
		cmd.Env = append(os.Environ(), helperEnv+"=event-writer", "RAUHA_TEST_MAXSIZE="+strconv.Itoa(max))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := NewEventLog(root).Read("web", time.Time{})
	if err != nil {
		t.Fatalf("Read after concurrent rotation: %v", err)
	}
	if len(evs) == 0 || len(evs) >= procs*n {
		t.Fatalf("%d events kept of %d", len(evs), procs*n)
	}
	for _, name := range []string{"web.jsonl", "web.jsonl.1"} {
		st, err := os.Stat(filepath.Join(root, "events", name))
		if name == "web.jsonl" && errors.Is(err, os.ErrNotExist) {
			continue // the last append rotated it away: Append rotates after writing
		}
		if err != nil || st.Size() > max+300 {
			t.Fatalf("%s: %v %v", name, st, err)
		}
	}
}

// Two rotations between polls: the tail must still deliver every event.
func TestEventLogTailAcrossRotations(t *testing.T) {
	l := NewEventLog(t.TempDir()).WithMaxSize(600)
	tails := map[string]*tail{}
	defer func() {
		for _, t := range tails {
			t.close()
		}
	}()
	var got []int
	poll := func() {
		t.Helper()
		evs, err := l.pollOnce("web", tails)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pids(evs)...)
	}
	poll() // nothing yet
	next := 0
	appendN := func(k int) {
		for i := 0; i < k; i++ {
			if err := l.Append("web", ev(next)); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	appendN(2)
	poll()
	appendN(1)
	poll()
	appendN(7) // at ~200 bytes an event, this rotates twice
	poll()
	appendN(3)
	poll()
	poll()
	want := make([]int, next)
	for i := range want {
		want[i] = i
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tailed %v, want %v", got, want)
	}
}

func TestEventLogFollow(t *testing.T) {
	l := NewEventLog(t.TempDir()).WithMaxSize(800).WithPollInterval(5 * time.Millisecond)
	if err := l.Append("web", ev(0), ev(1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan Event, 100)
	done := make(chan error, 1)
	go func() {
		done <- l.Follow(ctx, "", t0.Add(time.Second), func(e Event) error {
			got <- e
			return nil
		})
	}()
	const n = 30
	for i := 2; i < n; i++ {
		zone := "web"
		if i%3 == 0 {
			zone = "db"
		}
		if err := l.Append(zone, ev(i)); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			time.Sleep(7 * time.Millisecond)
		}
	}
	seen := map[int]bool{}
	timeout := time.After(10 * time.Second)
	for len(seen) < n-1 {
		select {
		case e := <-got:
			if seen[e.Pid] {
				t.Fatalf("event %d delivered twice", e.Pid)
			}
			if e.Pid == 0 {
				t.Fatal("event before since delivered")
			}
			seen[e.Pid] = true
		case <-timeout:
			t.Fatalf("Follow delivered %d of %d events", len(seen), n-1)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow after cancel = %v, want nil", err)
	}

	// An error from the callback stops Follow and is returned.
	stop := errors.New("stop")
	err := l.Follow(context.Background(), "web", time.Time{}, func(Event) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("Follow = %v, want the callback's error", err)
	}
}
