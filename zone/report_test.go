package zone

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestIsolationReport(t *testing.T) {
	var empty IsolationReport
	empty.Finish()
	if empty.Isolated {
		t.Fatal("a report without checks claims isolation")
	}
	if b, _ := json.Marshal(&empty); !strings.Contains(string(b), `"checks":[]`) {
		t.Fatalf("empty checks encoded as %s", b)
	}

	r := IsolationReport{Zone: "web", Container: "c1", Model: ModelSyscallPolicy, Backend: "landlock"}
	r.Add("cgroup-registered", true, "cgroup id %d in zone %d", 42, 7)
	r.Add("policy-in-kernel", true, "100% of rules")
	r.Finish()
	if !r.Isolated {
		t.Fatal("all checks passed but not isolated")
	}
	if r.Checks[0].Detail != "cgroup id 42 in zone 7" || r.Checks[1].Detail != "100% of rules" {
		t.Fatalf("details %+v", r.Checks)
	}
	r.Add("hook-file_open", false, "not attached:\n\tEPERM")
	r.Finish()
	if r.Isolated {
		t.Fatal("a failed check still reports isolated")
	}

	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"zone:", "web", "container:", "c1", "model:", "SyscallPolicy", "backend:", "landlock",
		"isolated:", "no", "RESULT", "PASS    cgroup-registered  cgroup id 42 in zone 7", "FAIL    hook-file_open     not attached:  EPERM"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 10 {
		t.Errorf("text report has %d lines, want 10 (5 header, blank, title, 3 checks):\n%s", lines, out)
	}

	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"zone", "container", "model", "backend", "isolated", "checks"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON %s lacks %q", b, k)
		}
	}
	c := m["checks"].([]any)[2].(map[string]any)
	if c["name"] != "hook-file_open" || c["passed"] != false {
		t.Errorf("check JSON %v", c)
	}
	noCtr := IsolationReport{Zone: "z"}
	if b, _ := json.Marshal(&noCtr); strings.Contains(string(b), "container") {
		t.Errorf("empty container not omitted: %s", b)
	}
}

func TestIsolationReportLimits(t *testing.T) {
	r := IsolationReport{Zone: "z"}
	r.Add("x", true, "ok")
	r.Limit("signals: no event")
	r.Limit("signals: no event")
	r.Limit("exec: in memory")
	r.Finish()
	if !r.Isolated {
		t.Fatal("a known limit is not a failed check")
	}
	if len(r.Limits) != 2 {
		t.Fatalf("limits %q: want each once", r.Limits)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(buf.String(), "\nKNOWN LIMITS (what the backend cannot do here; not controls)\n- signals: no event\n- exec: in memory\n") {
		t.Errorf("text report:\n%s", buf.String())
	}
	var none IsolationReport
	none.Finish()
	if b, _ := json.Marshal(&none); !strings.Contains(string(b), `"limits":[]`) {
		t.Errorf("no limits encoded as %s", b)
	}
	buf.Reset()
	none.WriteText(&buf)
	if strings.Contains(buf.String(), "KNOWN LIMITS") {
		t.Errorf("a report without limits prints the section:\n%s", buf.String())
	}
}
