package libzone

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startTime is field 22 of /proc/pid/stat, as libcontainer records it.
func startTime(t *testing.T, pid int) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestReadStateFile(t *testing.T) {
	e := &Engine{root: t.TempDir()}
	if _, err := e.readStateFile("nosuch"); !errors.Is(err, ErrNotExist) || err.Error() != "container nosuch does not exist: container does not exist" {
		t.Fatalf("missing container: %v", err)
	}
	// A create that died before libcontainer saved its state.
	if err := os.Mkdir(e.stateDir("bare"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := e.readStateFile("bare"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("bare state directory: %v", err)
	}
	if _, err := e.readStateFile("../x"); err == nil || !strings.Contains(err.Error(), "invalid container id") {
		t.Fatalf("id with a slash: %v", err)
	}
	write := func(id, data string) {
		t.Helper()
		if err := os.MkdirAll(e.stateDir(id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.stateDir(id), "state.json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("other", `{"id":"c9"}`)
	if _, err := e.readStateFile("other"); err == nil || !strings.Contains(err.Error(), `names container "c9"`) {
		t.Fatalf("state of another container: %v", err)
	}
	write("torn", `{"id":"torn","init_pro`)
	if _, err := e.readStateFile("torn"); err == nil || !strings.Contains(err.Error(), "state.json") {
		t.Fatalf("torn state file: %v", err)
	}
	write("c1", `{"id":"c1","init_process_pid":42,"init_process_start":7,"config":{"rootfs":"/r","labels":["bundle=/b","k=v"],
		"namespaces":[{"type":"NEWNET"},{"type":"NEWPID"}]},"cgroup_paths":{"":"/sys/fs/cgroup/unified/x"}}`)
	sf, err := e.readStateFile("c1")
	if err != nil {
		t.Fatal(err)
	}
	if sf.Pid != 42 || sf.StartTime != 7 || sf.Config.Rootfs != "/r" || sf.Cgroups[""] != "/sys/fs/cgroup/unified/x" || !sf.privatePID() || sf.dir != e.stateDir("c1") {
		t.Fatalf("decoded %+v", sf)
	}
}

// privatePID follows configs.Namespaces.IsPrivate: a NEWPID entry without
// a path. Joining one by path, or having none, shares a PID namespace.
func TestPrivatePID(t *testing.T) {
	ns := func(typ, path string) struct {
		Type string `json:"type"`
		Path string `json:"path"`
	} {
		return struct {
			Type string `json:"type"`
			Path string `json:"path"`
		}{typ, path}
	}
	var sf stateFile
	if sf.privatePID() {
		t.Fatal("no namespaces: private")
	}
	sf.Config.Namespaces = append(sf.Config.Namespaces, ns("NEWNET", ""))
	if sf.privatePID() {
		t.Fatal("only a network namespace: private")
	}
	sf.Config.Namespaces = append(sf.Config.Namespaces, ns("NEWPID", "/proc/1/ns/pid"))
	if sf.privatePID() {
		t.Fatal("a joined PID namespace: private")
	}
	sf.Config.Namespaces[1] = ns("NEWPID", "")
	if !sf.privatePID() {
		t.Fatal("a new PID namespace: not private")
	}
}

// The exec fifo handshake with a writer that behaves like libcontainer's
// init: it opens the fifo for writing (blocking until start reads), writes
// one byte and closes it.
func TestReadExecFifo(t *testing.T) {
	path := filepath.Join(t.TempDir(), execFifoName)
	if err := unix.Mkfifo(path, 0o622); err != nil {
		t.Fatal(err)
	}
	// Nobody has written: a non-blocking read finds nothing.
	if err := readExecFifo(path, unix.O_NONBLOCK); err == nil || err.Error() != "cannot start an already running container" {
		t.Fatalf("fifo without a writer: %v", err)
	}
	wrote := make(chan error, 1)
	go func() {
		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, []byte("0"))
			unix.Close(fd)
		}
		wrote <- err
	}()
	if err := readExecFifo(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the fifo is still there after start: %v", err)
	}
	// Started already: the fifo is gone.
	if err := readExecFifo(path, 0); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("second start: %v", err)
	}
}

// An init that is gone never opens the fifo: start notices within its
// poll interval instead of blocking for ever.
func TestExecFifoDeadInit(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, execFifoName), 0o622); err != nil {
		t.Fatal(err)
	}
	sf := &stateFile{Pid: os.Getpid(), StartTime: startTime(t, os.Getpid()) + 1, dir: dir}
	t0 := time.Now()
	err := sf.execFifo()
	if err == nil || err.Error() != "container process is already dead" {
		t.Fatalf("execFifo with a dead init: %v", err)
	}
	if d := time.Since(t0); d < 100*time.Millisecond || d > 5*time.Second {
		t.Fatalf("execFifo returned after %s", d)
	}
}

func TestSignalInit(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // already dead when the test passes
	pid := cmd.Process.Pid
	st := startTime(t, pid)

	// Another start time: the pid was reused, the signal must not go out.
	if err := (&stateFile{Pid: pid, StartTime: st + 1}).signalInit(unix.SIGTERM); !errors.Is(err, errInitGone) {
		t.Fatalf("signal to a reused pid: %v", err)
	}
	if err := (&stateFile{Pid: pid, StartTime: st}).signalInit(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != unix.SIGTERM {
		t.Fatalf("sleep ended with %v, want SIGTERM", err)
	}
	if err := (&stateFile{Pid: pid, StartTime: st}).signalInit(unix.SIGTERM); !errors.Is(err, errInitGone) {
		t.Fatalf("signal to a reaped init: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 10000)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	for _, data := range [][]byte{nil, []byte("x"), big[:4096], big} {
		path := dir + "/f"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readFile(path)
		if err != nil || string(got) != string(data) {
			t.Fatalf("readFile of %d bytes = %d bytes, %v", len(data), len(got), err)
		}
	}
	if _, err := readFile(dir + "/missing"); err == nil || err.Error() != "open "+dir+"/missing: no such file or directory" {
		t.Fatalf("readFile of a missing file: %v", err)
	}
}

// plainDestroy holds only for what a delete of a stopped container can do
// without libcontainer: remove cgroupfs directories and the state.
func TestPlainDestroy(t *testing.T) {
	const pid = `"namespaces":[{"type":"NEWPID"}]`
	for _, c := range []struct {
		config string
		plain  bool
	}{
		{`{` + pid + `}`, true},
		{`{` + pid + `,"Hooks":{"prestart":[{"path":"/bin/true"}]},"intel_rdt":null}`, true},
		{`{` + pid + `,"Hooks":{"poststop":[]}}`, true},
		{`{` + pid + `,"Hooks":{"poststop":[{"path":"/bin/true"}]}}`, false},
		{`{` + pid + `,"intel_rdt":{"closID":"c1"}}`, false},
		{`{` + pid + `,"cgroups":{"Systemd":true}}`, false},
		{`{"namespaces":[{"type":"NEWNET"}]}`, false},
		{`{"namespaces":[{"type":"NEWPID","path":"/proc/1/ns/pid"}]}`, false},
	} {
		var sf stateFile
		if err := json.Unmarshal([]byte(`{"config":`+c.config+`}`), &sf); err != nil {
			t.Fatal(err)
		}
		if got := sf.plainDestroy(); got != c.plain {
			t.Errorf("config %s: plainDestroy = %v, want %v", c.config, got, c.plain)
		}
	}
	var sf stateFile
	if err := json.Unmarshal([]byte(`{"intel_rdt_path":"/sys/fs/resctrl/c1","config":{`+pid+`}}`), &sf); err != nil {
		t.Fatal(err)
	}
	if sf.plainDestroy() {
		t.Error("a container with an RDT group: plainDestroy")
	}
}

// rauha's bookkeeping labels (the fallback's denied files and links) are not
// the bundle's annotations: state does not show them.
func TestStateHidesOwnLabels(t *testing.T) {
	e := &Engine{root: t.TempDir()}
	if err := os.MkdirAll(e.stateDir("c1"), 0o700); err != nil {
		t.Fatal(err)
	}
	data := `{"id":"c1","init_process_pid":0,"config":{"rootfs":"/r","labels":["bundle=/b","k=v","` +
		deniedLinksLabel + `=[\"/a\"]","` + deniedFilesLabel + `=[\"/etc/shadow\"]"]}}`
	if err := os.WriteFile(filepath.Join(e.stateDir("c1"), "state.json"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := e.State("c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Annotations) != 1 || st.Annotations["k"] != "v" || st.Bundle != "/b" {
		t.Fatalf("state: bundle %q, annotations %v", st.Bundle, st.Annotations)
	}
}
