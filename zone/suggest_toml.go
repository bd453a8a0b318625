package zone

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// TOML writes the suggested policy as a policy file that ParsePolicy (and
// so "rauha zone update --policy") reads back to the same policy. Every
// entry the recording needed carries a comment saying what needed it, and
// every entry removed from the base policy is left as a comment saying why;
// header lines (without "#") come first, then what stays unresolved.
func (s *Suggestion) TOML(header ...string) []byte {
	w := &tomlWriter{reasons: map[[2]string]SuggestedRule{}}
	for _, r := range s.Rules {
		e := r.Entry
		if r.Removed {
			e = "-" + e
		}
		w.reasons[[2]string{r.Key, e}] = r
	}
	for _, h := range header {
		w.comment("", h)
	}
	if len(s.Unresolved) > 0 {
		w.comment("", "Recorded, but not allowed by this policy:")
		for _, u := range s.Unresolved {
			w.comment("", "  "+u)
		}
	}
	p := s.Policy
	w.table("zone")
	w.str("mode", p.Zone.Mode)
	if r, ok := w.reasons[[2]string{"zone.admission", p.Zone.Admission}]; ok {
		w.comment("", r.Reason)
	}
	w.str("admission", p.Zone.Admission)
	w.table("capabilities")
	w.list("capabilities.allowed", p.Capabilities.Allowed)
	w.table("filesystem")
	w.list("filesystem.writable_paths", p.Filesystem.WritablePaths)
	w.list("filesystem.read_only", plain(p.Filesystem.ReadOnly))
	w.list("filesystem.deny", plain(p.Filesystem.Deny))
	w.table("exec")
	w.list("exec.allow", plain(p.Exec.Allow))
	w.list("exec.deny", plain(p.Exec.Deny))
	w.table("network")
	if p.Network.Mode != "" {
		w.str("mode", p.Network.Mode)
	}
	if p.Network.Subnet != "" {
		w.str("subnet", p.Network.Subnet)
	}
	if p.Network.IPv6 {
		w.flush()
		fmt.Fprintf(&w.b, "ipv6 = true\n")
	}
	if p.Network.Subnet6 != "" {
		w.str("subnet6", p.Network.Subnet6)
	}
	w.list("network.allowed_egress", p.Network.AllowedEgress)
	w.list("network.denied_egress", plain(p.Network.DeniedEgress))
	w.list("network.allowed_zones", p.Network.AllowedZones)
	w.table("signals")
	w.list("signals.allowed_zones", plain(p.Signals.AllowedZones))
	w.table("resources")
	for _, kv := range []struct {
		k string
		v int64
	}{{"cpu_shares", p.Resources.CPUShares}, {"memory_limit", int64(p.Resources.MemoryLimit)}, {"io_weight", p.Resources.IOWeight}, {"pids_max", p.Resources.PidsMax}} {
		if kv.v != 0 {
			w.flush()
			fmt.Fprintf(&w.b, "%s = %d\n", kv.k, kv.v)
		}
	}
	w.table("devices")
	w.list("devices.allowed", p.Devices.Allowed)
	w.table("syscalls")
	w.list("syscalls.deny", plain(p.Syscalls.Deny))
	return w.b.Bytes()
}

// plain gives a plain list the pointer form: nil when empty (absent and
// empty mean the same for these keys).
func plain(l []string) *[]string {
	if len(l) == 0 {
		return nil
	}
	return &l
}

type tomlWriter struct {
	b       bytes.Buffer
	reasons map[[2]string]SuggestedRule
	pending string // a table header not written yet: empty tables are left out
}

func (w *tomlWriter) table(name string) { w.pending = name }

// flush writes the pending table header before the table's first line.
func (w *tomlWriter) flush() {
	if w.pending == "" {
		return
	}
	if w.b.Len() > 0 {
		w.b.WriteByte('\n')
	}
	fmt.Fprintf(&w.b, "[%s]\n", w.pending)
	w.pending = ""
}

func (w *tomlWriter) str(key, v string) {
	w.flush()
	fmt.Fprintf(&w.b, "%s = %s\n", key, tomlString(v))
}

// list writes a list, one entry a line with the reason of each added entry
// as its comment, then the entries removed from the base. A nil list is
// left out (absent), unless entries were removed from it.
func (w *tomlWriter) list(key string, l *[]string) {
	var removed []SuggestedRule
	for k, r := range w.reasons {
		if k[0] == key && r.Removed {
			removed = append(removed, r)
		}
	}
	sortRules(removed)
	for _, r := range removed {
		w.flush()
		w.comment("", fmt.Sprintf("%s removed from %s: %s", tomlString(r.Entry), key, r.Reason))
	}
	if l == nil {
		return
	}
	w.flush()
	name := key[strings.IndexByte(key, '.')+1:]
	if len(*l) == 0 {
		fmt.Fprintf(&w.b, "%s = []\n", name)
		return
	}
	fmt.Fprintf(&w.b, "%s = [\n", name)
	for _, e := range *l {
		fmt.Fprintf(&w.b, "  %s,", tomlString(e))
		if r, ok := w.reasons[[2]string{key, e}]; ok {
			w.comment(" ", r.Reason)
		} else {
			w.b.WriteByte('\n')
		}
	}
	w.b.WriteString("]\n")
}

func sortRules(rs []SuggestedRule) {
	slices.SortFunc(rs, func(a, b SuggestedRule) int { return strings.Compare(a.Entry, b.Entry) })
}

// comment writes one comment line: recorded names and programs are the
// workload's, so anything that could end the comment is escaped.
func (w *tomlWriter) comment(indent, text string) {
	w.b.WriteString(indent)
	w.b.WriteString("#")
	if text != "" {
		w.b.WriteString(" ")
	}
	for _, r := range text {
		switch {
		case r == '\\':
			w.b.WriteString(`\\`)
		case r == 0x7f || (r < 0x20 && r != '\t') || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			fmt.Fprintf(&w.b, `\u%04x`, r)
		default:
			w.b.WriteRune(r)
		}
	}
	w.b.WriteByte('\n')
}

// tomlString is a TOML basic string: JSON's escapes are TOML's.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	// JSON leaves DEL alone; TOML wants it escaped.
	return strings.ReplaceAll(strings.TrimSuffix(b.String(), "\n"), "\x7f", `\u007f`)
}
