package zone

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Isolation models. Code that interprets a report (or events) must look at the
// model: a syscall policy is enforced by the shared kernel and is not a
// hardware boundary.
const (
	ModelSyscallPolicy    = "SyscallPolicy"    // both Linux backends
	ModelHardwareBoundary = "HardwareBoundary" // reserved for a future VM tier
)

// Check is one verified property of a zone or container.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// IsolationReport is the result of `rauha zone verify`.
type IsolationReport struct {
	Zone      string  `json:"zone"`
	Container string  `json:"container,omitempty"`
	Model     string  `json:"model"`
	Backend   string  `json:"backend"`
	Isolated  bool    `json:"isolated"`
	Checks    []Check `json:"checks"`
	// Limits names what the backend cannot do for this zone on this
	// kernel (docs/design.md, "Known limits"): not a failed check, since
	// no configuration closes it, but never to be taken for a control.
	Limits []string `json:"limits"`
}

// Limit records a known limit that applies to the zone, once.
func (r *IsolationReport) Limit(s string) {
	if !slices.Contains(r.Limits, s) {
		r.Limits = append(r.Limits, s)
	}
}

// Add records a check. detail is a fmt format when args are given, and is
// used verbatim otherwise (so a '%' in an error message survives).
func (r *IsolationReport) Add(name string, passed bool, detail string, args ...any) {
	if len(args) > 0 {
		detail = fmt.Sprintf(detail, args...)
	}
	r.Checks = append(r.Checks, Check{Name: name, Passed: passed, Detail: detail})
}

// Finish computes Isolated: true only if at least one check ran and all
// passed, so an empty report never claims isolation.
func (r *IsolationReport) Finish() {
	if r.Checks == nil {
		r.Checks = []Check{} // "checks": [] rather than null in JSON
	}
	if r.Limits == nil {
		r.Limits = []string{}
	}
	r.Isolated = len(r.Checks) > 0
	for _, c := range r.Checks {
		if !c.Passed {
			r.Isolated = false
		}
	}
}

// WriteText prints the report as a header and a PASS/FAIL table.
func (r *IsolationReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "zone:\t%s\n", r.Zone)
	if r.Container != "" {
		fmt.Fprintf(tw, "container:\t%s\n", r.Container)
	}
	fmt.Fprintf(tw, "model:\t%s\n", r.Model)
	fmt.Fprintf(tw, "backend:\t%s\n", r.Backend)
	verdict := "no"
	if r.Isolated {
		verdict = "yes"
	}
	fmt.Fprintf(tw, "isolated:\t%s\n", verdict)
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tCHECK\tDETAIL")
	for _, c := range r.Checks {
		result := "FAIL"
		if c.Passed {
			result = "PASS"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", result, oneLine(c.Name), oneLine(c.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Limits) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "\nKNOWN LIMITS (what the backend cannot do here; not controls)"); err != nil {
		return err
	}
	for _, l := range r.Limits {
		if _, err := fmt.Fprintf(w, "- %s\n", oneLine(l)); err != nil {
			return err
		}
	}
	return nil
}

// oneLine keeps a cell from breaking the table: tabwriter treats tabs as
// column breaks and newlines as row ends.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\t", " ").Replace(s)
}
