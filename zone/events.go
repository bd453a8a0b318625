package zone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/flock"
)

// Decisions an event can record.
const (
	DecisionDeny  = "deny"  // the operation was refused
	DecisionAudit = "audit" // the operation was allowed because the zone is in audit mode
)

// Event is one deny (or audit) decision of the enforcement layer.
type Event struct {
	Time      time.Time `json:"time"`
	Zone      string    `json:"zone"`
	Container string    `json:"container"`
	Pid       int       `json:"pid"`
	Comm      string    `json:"comm"`
	Control   string    `json:"control"`  // e.g. "file_open", "socket_connect"
	Decision  string    `json:"decision"` // DecisionDeny or DecisionAudit
	Object    string    `json:"object"`   // path, address, capability, ...
	Backend   string    `json:"backend"`
	// For signal and ptrace controls: the task that was targeted.
	TargetPid  int    `json:"target_pid,omitempty"`
	TargetZone string `json:"target_zone,omitempty"`
}

// DefaultEventLogSize is the size at which a zone's event file is rotated.
const DefaultEventLogSize = 1 << 20

// ErrMalformedEvents is wrapped by Read when some lines could not be decoded;
// the events that could are returned alongside.
var ErrMalformedEvents = errors.New("malformed event lines skipped")

// EventLog keeps each zone's events as JSON lines in <root>/events/<zone>.jsonl.
// A file that grows past the size limit is renamed to <zone>.jsonl.1, replacing
// the previous old generation, so a zone uses at most about twice the limit.
//
// Many processes append at once (every rauha command that drains the kernel's
// event buffer). Each batch is one O_APPEND write, which the kernel does not
// interleave with other appends. Appenders hold a shared flock on the events
// directory and rotation an exclusive one, so no append lands in a file that
// is being rotated away and readers see every generation whole.
type EventLog struct {
	dir     string
	maxSize int64
	poll    time.Duration
}

// NewEventLog returns the event log of a runtime root. It touches nothing
// until the first Append.
func NewEventLog(root string) *EventLog {
	return &EventLog{dir: filepath.Join(root, "events"), maxSize: DefaultEventLogSize, poll: 250 * time.Millisecond}
}

// WithMaxSize returns a log rotating its files past n bytes.
func (l *EventLog) WithMaxSize(n int64) *EventLog {
	c := *l
	c.maxSize = n
	return &c
}

// WithPollInterval returns a log whose Follow checks for new events every d.
func (l *EventLog) WithPollInterval(d time.Duration) *EventLog {
	c := *l
	c.poll = d
	return &c
}

// Dir is the directory holding the event files.
func (l *EventLog) Dir() string { return l.dir }

func (l *EventLog) path(zone string) string { return filepath.Join(l.dir, zone+".jsonl") }

// Append writes events to a zone's file as one batch. An event's empty Zone is
// set to zone (a different one is an error) and its zero Time to now.
func (l *EventLog) Append(zone string, evs ...Event) error {
	if err := ValidateName("zone name", zone); err != nil {
		return err
	}
	if len(evs) == 0 {
		return nil
	}
	now := time.Now().UTC()
	var buf bytes.Buffer
	for _, ev := range evs {
		if ev.Zone == "" {
			ev.Zone = zone
		} else if ev.Zone != zone {
			return fmt.Errorf("append events to zone %q: event belongs to zone %q", zone, ev.Zone)
		}
		if ev.Time.IsZero() {
			ev.Time = now
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("create event directory: %w", err)
	}
	unlock, err := l.lock(unix.LOCK_SH)
	if err != nil {
		return err
	}
	size, err := appendBatch(l.path(zone), buf.Bytes())
	unlock()
	if err != nil {
		return err
	}
	if size > l.maxSize {
		return l.rotate(zone)
	}
	return nil
}

// appendBatch writes data with one O_APPEND write and returns the file size
// after it.
func appendBatch(path string, data []byte) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("open event file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat event file: %w", err)
	}
	// A writer killed mid-write leaves a line without its newline; start a
	// fresh line so that only the torn line is lost, not our first event.
	if st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	if _, err := f.Write(data); err != nil {
		return 0, fmt.Errorf("write event file %s: %w", path, err)
	}
	if st, err = f.Stat(); err != nil {
		return 0, fmt.Errorf("stat event file: %w", err)
	}
	return st.Size(), nil
}

func (l *EventLog) rotate(zone string) error {
	unlock, err := l.lock(unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	p := l.path(zone)
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat event file: %w", err)
	}
	if st.Size() <= l.maxSize {
		return nil // another process rotated it while we waited for the lock
	}
	if err := os.Rename(p, p+".1"); err != nil {
		return fmt.Errorf("rotate event file: %w", err)
	}
	return nil
}

// lock takes a flock on the events directory; the returned function releases
// it.
func (l *EventLog) lock(how int) (func(), error) {
	fd, err := unix.Open(l.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open event directory %s: %w", l.dir, err)
	}
	if err := flock.Lock(fd, how); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock event directory %s: %w", l.dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// Read returns a zone's events (all zones' when zone is "") with a Time not
// before since, oldest first; the rotated generation is included. A root
// without events yields none. If some lines could not be decoded (a writer
// was killed mid-write), the decodable events are returned with an error
// wrapping ErrMalformedEvents.
func (l *EventLog) Read(zone string, since time.Time) ([]Event, error) {
	if zone != "" {
		if err := ValidateName("zone name", zone); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(l.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := l.lock(unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	zones := []string{zone}
	if zone == "" {
		if zones, err = l.zones(); err != nil {
			return nil, err
		}
	}
	var out []Event
	var bad []string
	for _, z := range zones {
		for _, p := range []string{l.path(z) + ".1", l.path(z)} {
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read events: %w", err)
			}
			// An unterminated last line is an append in progress, not damage.
			evs, n, _ := parseEvents(data)
			if n > 0 {
				bad = append(bad, fmt.Sprintf("%d in %s", n, p))
			}
			out = append(out, notBefore(evs, since)...)
		}
	}
	sortEvents(out)
	if len(bad) > 0 {
		return out, fmt.Errorf("%w: %s", ErrMalformedEvents, strings.Join(bad, ", "))
	}
	return out, nil
}

// zones lists the zones that have event files.
func (l *EventLog) zones() ([]string, error) {
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list event files: %w", err)
	}
	var zones []string
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".1")
		z, ok := strings.CutSuffix(name, ".jsonl")
		if ok && ValidateName("zone name", z) == nil {
			zones = append(zones, z)
		}
	}
	slices.Sort(zones)
	return slices.Compact(zones), nil
}

// parseEvents decodes complete lines. It returns the events, the number of
// complete lines that did not decode, and the trailing bytes after the last
// newline.
func parseEvents(data []byte) (evs []Event, bad int, rest []byte) {
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return evs, bad, data
		}
		line := data[:i]
		data = data[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			bad++
			continue
		}
		evs = append(evs, ev)
	}
}

func notBefore(evs []Event, since time.Time) []Event {
	return slices.DeleteFunc(evs, func(ev Event) bool { return ev.Time.Before(since) })
}

// sortEvents orders by time; ties keep file order.
func sortEvents(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
}

// Follow calls fn for every event of zone (all zones when "") with a Time not
// before since: first those already logged, then new ones as they are
// appended, checking every poll interval and following rotations. It returns
// nil when ctx is done, or the first error of fn. Undecodable lines are
// skipped.
func (l *EventLog) Follow(ctx context.Context, zone string, since time.Time, fn func(Event) error) error {
	if zone != "" {
		if err := ValidateName("zone name", zone); err != nil {
			return err
		}
	}
	tails := map[string]*tail{}
	defer func() {
		for _, t := range tails {
			t.close()
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		evs, err := l.pollOnce(zone, tails)
		if err != nil {
			return err
		}
		for _, ev := range notBefore(evs, since) {
			if err := fn(ev); err != nil {
				return err
			}
		}
		timer.Reset(l.poll)
	}
}

func (l *EventLog) pollOnce(zone string, tails map[string]*tail) ([]Event, error) {
	if _, err := os.Stat(l.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := l.lock(unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	zones := []string{zone}
	if zone == "" {
		if zones, err = l.zones(); err != nil {
			return nil, err
		}
	}
	var out []Event
	for _, z := range zones {
		t := tails[z]
		if t == nil {
			t = &tail{}
			tails[z] = t
		}
		evs, err := t.advance(l.path(z))
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	sortEvents(out)
	return out, nil
}

// tail follows one zone's event file across rotations. f stays open on the
// last generation read, even once rotated away, so its inode number cannot be
// reused by a new file and mistaken for it.
type tail struct {
	started bool
	f       *os.File
	ino     uint64
	off     int64
	partial []byte
}

// advance returns the events appended since the last call. The caller holds
// the directory lock, so no rotation happens meanwhile.
func (t *tail) advance(path string) ([]Event, error) {
	var out []Event
	if !t.started {
		t.started = true
		for _, p := range []string{path + ".1", path} {
			if err := t.open(p); err != nil {
				return nil, err
			}
			evs, err := t.readRest()
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		return out, nil
	}
	cur := inode(path)
	if t.f != nil && cur == t.ino {
		return t.readRest()
	}
	// The generation we hold is no longer current: finish it, then read a
	// generation rotated away between two polls, then the current file.
	for _, p := range []string{"", path + ".1", path} {
		if p != "" {
			if ino := inode(p); ino == 0 || ino == t.ino {
				continue
			}
			if err := t.open(p); err != nil {
				return nil, err
			}
		}
		evs, err := t.readRest()
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
	}
	return out, nil
}

// open switches to the file at p; a missing file is not an error.
func (t *tail) open(p string) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open event file: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return fmt.Errorf("stat event file: %w", err)
	}
	t.close()
	t.f, t.ino, t.off, t.partial = f, st.Ino, 0, nil
	return nil
}

func (t *tail) readRest() ([]Event, error) {
	if t.f == nil {
		return nil, nil
	}
	data, err := io.ReadAll(io.NewSectionReader(t.f, t.off, 1<<62))
	if err != nil {
		return nil, fmt.Errorf("read event file: %w", err)
	}
	t.off += int64(len(data))
	evs, _, rest := parseEvents(append(t.partial, data...))
	t.partial = append([]byte(nil), rest...)
	return evs, nil
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

// inode returns the inode number of p, 0 when it does not exist.
func inode(p string) uint64 {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil {
		return 0
	}
	return st.Ino
}
