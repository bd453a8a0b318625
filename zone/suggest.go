package zone

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// Thresholds of Suggest's generalisations. Below them each object is
// allowed by name: a suggestion is widened only where a recording shows a
// workload using a place, not a single file in it.
const (
	// WriteDirThreshold: a directory in which this many distinct files (or
	// subdirectories) were written becomes a writable tree. Scratch,
	// cache and log directories get many names that change from run to
	// run; three distinct names already show that pattern, while two files
	// of one directory (a pid file and a lock) stay listed.
	WriteDirThreshold = 3
	// PackageTreeThreshold: a package-managed tree (PackageTrees) under
	// which this many distinct files were executed or mapped as code
	// becomes an exec.allow tree: the libraries and helpers a program loads
	// change with every package update, its files by name would not.
	PackageTreeThreshold = 3
	// EgressHostThreshold: this many distinct IPv4 hosts of one /24 on one
	// port become that /24 (a pool of servers behind one service).
	EgressHostThreshold = 4
)

// PackageTrees are the trees a distribution's package manager owns: their
// files are replaced by updates, never written by a workload.
var PackageTrees = []string{
	"/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin",
	"/usr/bin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/libx32", "/usr/sbin",
	"/usr/local/bin", "/usr/local/lib", "/usr/local/sbin",
}

// Suggestion is the narrowest policy that allows a recording, with what
// needed each rule.
type Suggestion struct {
	Policy *Policy `json:"policy"`
	// Rules say what needed each entry added to (or removed from) the base
	// policy, in the order of the TOML file.
	Rules []SuggestedRule `json:"rules"`
	// Unresolved lists what the recording holds that no policy of this zone
	// can allow, and why.
	Unresolved []string `json:"unresolved,omitempty"`
}

// SuggestedRule is one change to the base policy.
type SuggestedRule struct {
	Key     string `json:"key"`   // e.g. "filesystem.writable_paths"
	Entry   string `json:"entry"` // the list entry added or removed
	Removed bool   `json:"removed,omitempty"`
	Reason  string `json:"reason"` // what needed it: first time seen, count, program
}

// Suggest returns the narrowest policy that allows every observation of a
// recording made in zone against base (the policy the zone learned
// against): base, widened only where an observation needs it.
//
//   - a write outside base's writable_paths adds the file, or its directory
//     once WriteDirThreshold distinct names were written directly in it
//     (never "/", never a directory holding one of base's read_only or
//     deny paths, nor, with exec rules, a file the workload executes);
//   - a write under a read_only or deny entry, a read under a deny (or, on
//     the landlock backend, an exec.deny) entry and an exec under a deny
//     or exec.deny entry remove that entry;
//   - an exec outside a non-empty exec.allow adds the file, or its
//     package-managed tree once PackageTreeThreshold distinct files under
//     it were executed; a base without exec.allow gets one listing the
//     executed files so when the recording is a footprint
//     (ctx.Footprint; canNarrowExec says when), and a dynamic loader
//     in it makes admission "audit" (loaderAdmission);
//   - egress adds ADDR:PORT (ADDR without a port for a protocol without
//     ports), or A.B.C.0/24:PORT once EgressHostThreshold hosts of that /24
//     were reached on one port;
//   - capabilities and zones reached are added to capabilities.allowed and
//     network.allowed_zones; observed syscalls are removed from
//     syscalls.deny.
//
// Signals and ptrace into other zones, whatever the suggested policy still
// would not allow (checked with Simulate), and observations no policy entry
// can name (a relative path, an unknown capability) are listed as
// Unresolved.
func Suggest(base *Policy, obs []Observation, ctx SimulateContext) (*Suggestion, error) {
	sg := &suggester{p: base.Clone(), base: base, footprint: ctx.Footprint, reasons: map[[2]string]string{}}
	byKind := map[string][]Observation{}
	var malformed []string
	for _, o := range obs {
		o = cleanObservation(o)
		if _, err := Simulate(base, []Observation{o}, ctx); err != nil {
			malformed = append(malformed, fmt.Sprintf("%v: no policy entry can name it", err))
			continue
		}
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	obs = slices.Concat(byKind[ObserveRead], byKind[ObserveExec], byKind[ObserveWrite], byKind[ObserveEgress], byKind[ObservePeerZone],
		byKind[ObserveCapability], byKind[ObserveSyscall], byKind[ObserveSignal], byKind[ObservePtrace])
	sg.reads(byKind[ObserveRead])
	sg.execs(byKind[ObserveExec], byKind[ObserveWrite])
	sg.writes(byKind[ObserveWrite], byKind[ObserveExec])
	sg.egress(byKind[ObserveEgress])
	sg.peers(byKind[ObservePeerZone], ctx.Zone)
	sg.capabilities(byKind[ObserveCapability])
	sg.syscalls(byKind[ObserveSyscall])
	sg.p.normalize()
	for _, l := range sg.p.pointerLists() {
		if *l != nil {
			**l = sortedSet(**l)
		}
	}
	for _, l := range sg.p.plainLists() {
		*l = sortedSet(*l)
	}
	out := &Suggestion{Policy: sg.p, Rules: sg.rules(), Unresolved: malformed}
	left, err := Simulate(sg.p, obs, ctx)
	if err != nil {
		return nil, fmt.Errorf("suggest: %w", err)
	}
	for _, v := range left {
		out.Unresolved = append(out.Unresolved, fmt.Sprintf("%s %s: %s (%s)", v.Observation.Kind, v.Observation.Object, v.Reason, v.Observation.Describe()))
	}
	if err := out.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("suggest: the suggested policy does not validate: %w", err)
	}
	return out, nil
}

type suggester struct {
	p, base   *Policy
	footprint bool // SimulateContext.Footprint
	// reasons by (key, entry); an entry prefixed with "-" was removed.
	reasons map[[2]string]string
	order   [][2]string
}

func (sg *suggester) note(key, entry, reason string) {
	k := [2]string{key, entry}
	if _, ok := sg.reasons[k]; !ok {
		sg.order = append(sg.order, k)
	}
	sg.reasons[k] = reason
}

func (sg *suggester) rules() []SuggestedRule {
	var out []SuggestedRule
	for _, k := range sg.order {
		e, removed := strings.CutPrefix(k[1], "-")
		out = append(out, SuggestedRule{Key: k[0], Entry: e, Removed: removed, Reason: sg.reasons[k]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Describe says who did it, when first and how often: "by cat in
// container c1, first 2026-01-02T15:04:05Z, 3 times".
func (o Observation) Describe() string {
	var b strings.Builder
	if o.Comm != "" {
		fmt.Fprintf(&b, "by %s", o.Comm)
	}
	if o.Container != "" {
		fmt.Fprintf(&b, " in container %s", o.Container)
	}
	if !o.First.IsZero() {
		fmt.Fprintf(&b, ", first %s", o.First.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, ", %d %s", o.Count, plural(o.Count, "time", "times"))
	return strings.TrimPrefix(b.String(), ", ")
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// group describes observations generalised into one rule: "4 files
// executed under it; first /usr/lib/x by ld.so, first 2026-…, 12 times in
// all".
func group(obs []Observation, what string) string {
	first := obs[0]
	var total uint64
	for _, o := range obs {
		total += o.Count
		if !o.First.IsZero() && (first.First.IsZero() || o.First.Before(first.First)) {
			first = o
		}
	}
	return fmt.Sprintf("%d %s under it; first %s %s, %d %s in all", len(obs), what, first.Object, Observation{Comm: first.Comm, Container: first.Container, First: first.First, Count: first.Count}.Describe(), total, plural(total, "time", "times"))
}

// removeCovering drops every entry of *list that path is under, noting
// why.
func (sg *suggester) removeCovering(key string, list *[]string, o Observation) {
	*list = slices.DeleteFunc(*list, func(e string) bool {
		if !under(o.Object, e) {
			return false
		}
		sg.note(key, "-"+e, fmt.Sprintf("%s %s %s", verbOf(o.Kind), o.Object, o.Describe()))
		return true
	})
}

func verbOf(kind string) string {
	switch kind {
	case ObserveRead:
		return "read"
	case ObserveWrite:
		return "written"
	case ObserveExec:
		return "executed"
	}
	return kind
}

func (sg *suggester) reads(obs []Observation) {
	for _, o := range obs {
		sg.removeCovering("filesystem.deny", &sg.p.Filesystem.Deny, o)
		sg.removeCovering("exec.deny", &sg.p.Exec.Deny, o)
	}
}

func (sg *suggester) execs(obs, writes []Observation) {
	narrow := len(sg.base.Exec.Allow) == 0 && sg.footprint && sg.canNarrowExec(obs, writes)
	var outside []Observation
	for _, o := range obs {
		sg.removeCovering("filesystem.deny", &sg.p.Filesystem.Deny, o)
		sg.removeCovering("exec.deny", &sg.p.Exec.Deny, o)
		if _, ok := covering(sg.base.Exec.Allow, o.Object); !ok && (narrow || len(sg.base.Exec.Allow) > 0) {
			outside = append(outside, o)
		}
	}
	byTree := map[string][]Observation{}
	for _, o := range outside {
		if t := packageTree(o.Object); t != "" && !sg.writable(t) {
			byTree[t] = append(byTree[t], o)
		}
	}
	for _, t := range sortedKeys(byTree) {
		if g := byTree[t]; len(g) >= PackageTreeThreshold {
			sg.p.Exec.Allow = append(sg.p.Exec.Allow, t)
			sg.note("exec.allow", t, group(g, "files executed"))
		}
	}
	for _, o := range outside {
		if _, ok := covering(sg.p.Exec.Allow, o.Object); !ok {
			sg.p.Exec.Allow = append(sg.p.Exec.Allow, o.Object)
			sg.note("exec.allow", o.Object, "executed "+o.Describe())
		}
	}
	sg.loaderAdmission(obs)
}

// canNarrowExec reports whether a base without exec.allow may get one that
// lists what the workload executed (a footprint, SimulateContext.Footprint,
// holds every exec): the base is enforced and restricts
// writes (writable_paths), so that the exec rules' noexec covers every
// writable place, and the workload runs nothing it may write (under the
// base's writable_paths, or a file it wrote), which noexec would stop.
func (sg *suggester) canNarrowExec(execs, writes []Observation) bool {
	w := sg.base.Filesystem.WritablePaths
	if len(execs) == 0 || w == nil || sg.base.Zone.Mode != ModeEnforce {
		return false
	}
	for _, o := range execs {
		if _, ok := covering(*w, o.Object); ok {
			return false
		}
		for _, wr := range writes {
			if under(o.Object, wr.Object) {
				return false
			}
		}
	}
	return true
}

// loaderAdmission makes a suggestion whose exec.allow lets a dynamic
// loader run (a dynamically linked workload needs its loader: the kernel
// runs it, and Landlock judges it as executed) admit with "audit": strict
// admission refuses such a zone, since the loader runs any file it can
// read, outside exec.allow too ("ld.so /some/binary").
func (sg *suggester) loaderAdmission(execs []Observation) {
	if sg.p.Zone.Admission != AdmissionStrict || len(sg.p.Exec.Allow) == 0 {
		return
	}
	for _, o := range execs {
		if !isLoader(o.Object) {
			continue
		}
		if _, ok := covering(sg.p.Exec.Allow, o.Object); !ok {
			continue
		}
		sg.p.Zone.Admission = AdmissionAudit
		sg.note("zone.admission", AdmissionAudit, fmt.Sprintf("the dynamic loader %s is in exec.allow (executed %s), which strict admission refuses: the loader runs any file it can read, also outside exec.allow", o.Object, o.Describe()))
		return
	}
}

// isLoader reports whether p names a dynamic loader (ld-linux-x86-64.so.2,
// ld-linux-aarch64.so.1, ld-musl-x86_64.so.1), as admission finds them.
func isLoader(p string) bool {
	b := path.Base(p)
	return strings.HasPrefix(b, "ld-") && strings.Contains(b, ".so")
}

// writable reports whether base lets the workload write under tree t (an
// exec.allow tree there would be noexec anyway).
func (sg *suggester) writable(t string) bool {
	w := sg.base.Filesystem.WritablePaths
	if w == nil {
		return false
	}
	for _, e := range *w {
		if under(t, e) || under(e, t) {
			return true
		}
	}
	return false
}

// packageTree is the deepest PackageTrees entry p is below, or "".
func packageTree(p string) string {
	best := ""
	for _, t := range PackageTrees {
		if p != t && under(p, t) && len(t) > len(best) {
			best = t
		}
	}
	return best
}

func (sg *suggester) writes(obs, execs []Observation) {
	fs := &sg.p.Filesystem
	var outside []Observation
	for _, o := range obs {
		sg.removeCovering("filesystem.deny", &fs.Deny, o)
		sg.removeCovering("filesystem.read_only", &fs.ReadOnly, o)
		if fs.WritablePaths != nil && !under(o.Object, "/dev") {
			if _, ok := covering(*fs.WritablePaths, o.Object); !ok {
				outside = append(outside, o)
			}
		}
	}
	if len(outside) == 0 {
		return
	}
	// Directories by the distinct names written directly in them; a
	// shallower directory that qualifies covers the deeper ones.
	byDir := map[string][]Observation{}
	for _, o := range outside {
		d := path.Dir(o.Object)
		byDir[d] = append(byDir[d], o)
	}
	dirs := sortedKeys(byDir)
	sort.SliceStable(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") < strings.Count(dirs[j], "/") })
	for _, d := range dirs {
		g := byDir[d]
		if len(g) < WriteDirThreshold || !sg.canWriteTree(d, execs) {
			continue
		}
		if _, ok := covering(*fs.WritablePaths, d); ok {
			continue
		}
		var under []Observation
		for _, o := range outside {
			if strings.HasPrefix(o.Object, d+"/") {
				under = append(under, o)
			}
		}
		*fs.WritablePaths = append(*fs.WritablePaths, d)
		sg.note("filesystem.writable_paths", d, group(under, "files written"))
	}
	for _, o := range outside {
		if _, ok := covering(*fs.WritablePaths, o.Object); !ok {
			*fs.WritablePaths = append(*fs.WritablePaths, o.Object)
			sg.note("filesystem.writable_paths", o.Object, "written "+o.Describe())
		}
	}
}

// canWriteTree reports whether directory d may become a writable tree: not
// "/", no read_only or deny path of the suggestion inside it (Landlock
// could not keep them), and, when the policy has exec rules, nothing the
// workload executes inside it (a writable tree is noexec then).
func (sg *suggester) canWriteTree(d string, execs []Observation) bool {
	if d == "/" {
		return false
	}
	for _, e := range slices.Concat(sg.p.Filesystem.ReadOnly, sg.p.Filesystem.Deny) {
		if under(e, d) {
			return false
		}
	}
	if hasExecRules(sg.p) {
		for _, o := range execs {
			if under(o.Object, d) {
				return false
			}
		}
	}
	return true
}

func (sg *suggester) egress(obs []Observation) {
	n := &sg.p.Network
	// A recorded destination that a denied_egress entry covers takes the
	// entry away: the workload needed it.
	for _, o := range obs {
		d, err := ParseEgressObject(o.Object)
		if err != nil {
			continue // Simulate rejected it already
		}
		n.DeniedEgress = slices.DeleteFunc(n.DeniedEgress, func(e string) bool {
			r, err := ParseEgress(e)
			if err != nil || !r.Contains(d.Addr, d.Port) {
				return false
			}
			sg.note("network.denied_egress", "-"+e, fmt.Sprintf("%s %s", o.Object, o.Describe()))
			return true
		})
	}
	if len(n.DeniedEgress) == 0 {
		n.DeniedEgress = nil
	}
	if n.AllowedEgress == nil {
		return // not restricted
	}
	type pool struct {
		prefix netip.Prefix
		port   uint16
	}
	byPool := map[pool][]Observation{}
	hosts := map[pool]map[netip.Addr]bool{}
	var need []Observation
	var dsts []EgressObject
	for _, o := range obs {
		d, err := ParseEgressObject(o.Object)
		if err != nil {
			continue // Simulate rejected it already
		}
		if (&simulator{p: sg.p}).egress(d) == nil {
			continue
		}
		need, dsts = append(need, o), append(dsts, d)
		if d.Addr.Is4() {
			k := pool{netip.PrefixFrom(d.Addr, 24).Masked(), d.Port}
			byPool[k] = append(byPool[k], o)
			if hosts[k] == nil {
				hosts[k] = map[netip.Addr]bool{}
			}
			hosts[k][d.Addr] = true
		}
	}
	pools := make([]pool, 0, len(byPool))
	for k := range byPool {
		pools = append(pools, k)
	}
	sort.Slice(pools, func(i, j int) bool {
		if c := pools[i].prefix.Addr().Compare(pools[j].prefix.Addr()); c != 0 {
			return c < 0
		}
		return pools[i].port < pools[j].port
	})
	for _, k := range pools {
		if len(hosts[k]) >= EgressHostThreshold {
			e := egressEntry(Egress{Prefix: k.prefix, Port: k.port})
			*n.AllowedEgress = append(*n.AllowedEgress, e)
			sg.note("network.allowed_egress", e, group(byPool[k], "destinations reached"))
		}
	}
	for i, o := range need {
		if (&simulator{p: sg.p}).egress(dsts[i]) == nil {
			continue
		}
		e := egressEntry(dsts[i].Rule())
		*n.AllowedEgress = append(*n.AllowedEgress, e)
		sg.note("network.allowed_egress", e, fmt.Sprintf("%s %s", o.Object, o.Describe()))
	}
}

func (sg *suggester) peers(obs []Observation, self string) {
	for _, o := range obs {
		if o.Object == self {
			continue
		}
		n := &sg.p.Network
		if n.AllowedZones == nil {
			// Absent, packets to other zones' members follow
			// allowed_egress by address, which a peer_zone observation
			// does not hold. Listing the zone allows them; it also limits
			// packets from other zones to the zones listed.
			n.AllowedZones = List()
		}
		if !slices.Contains(*n.AllowedZones, o.Object) {
			*n.AllowedZones = append(*n.AllowedZones, o.Object)
			sg.note("network.allowed_zones", o.Object, "packets to its members "+o.Describe())
		}
	}
}

func (sg *suggester) capabilities(obs []Observation) {
	a := sg.p.Capabilities.Allowed
	if a == nil {
		return // the OCI config's capabilities are kept
	}
	for _, o := range obs {
		name, err := CapabilityName(o.Object)
		if err != nil || (&simulator{p: sg.p}).capability(name) == nil {
			continue
		}
		*a = append(*a, strings.TrimPrefix(name, "CAP_"))
		sg.note("capabilities.allowed", strings.TrimPrefix(name, "CAP_"), "exercised "+o.Describe())
	}
}

func (sg *suggester) syscalls(obs []Observation) {
	for _, o := range obs {
		sg.p.Syscalls.Deny = slices.DeleteFunc(sg.p.Syscalls.Deny, func(s string) bool {
			if s != o.Object {
				return false
			}
			sg.note("syscalls.deny", "-"+s, "called "+o.Describe())
			return true
		})
	}
}

// egressEntry writes an allowed_egress entry as a user would: a single
// address without its /32 or /128.
func egressEntry(e Egress) string {
	if !e.Prefix.IsSingleIP() {
		return e.String()
	}
	a := e.Prefix.Addr().String()
	switch {
	case e.Port == 0:
		return a
	case e.Prefix.Addr().Is4():
		return fmt.Sprintf("%s:%d", a, e.Port)
	}
	return fmt.Sprintf("[%s]:%d", a, e.Port)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
