package zone

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/moby/sys/capability"
	toml "github.com/pelletier/go-toml/v2"
	"golang.org/x/sys/unix"
)

// Zone modes ([zone] mode).
const (
	ModeEnforce = "enforce" // deny what the policy forbids
	ModeAudit   = "audit"   // log would-be denials, allow them
	// ModeLearn: deny nothing and record what the workload does (see
	// Zone.Learning). A policy file with this mode is the base policy of a
	// zone that learns.
	ModeLearn = "learn"
)

// Admission modes ([zone] admission): what to do when a control the policy
// asks for cannot be enforced on this kernel.
const (
	AdmissionStrict = "strict" // refuse to start the container
	AdmissionAudit  = "audit"  // start it and list the unavailable controls
)

// Network modes ([network] mode). An empty mode keeps whatever network
// namespace configuration the OCI spec asks for.
const (
	NetworkIsolated = "isolated"
	NetworkBridged  = "bridged"
	NetworkHost     = "host"
)

// Policy is what a zone allows. It is the TOML policy file, decoded, and is
// stored as JSON in the zone record; the TOML and JSON keys are the same.
//
// Absent versus empty: a list whose type is *[]string distinguishes "key
// absent" (nil pointer: the policy does not restrict this control) from
// "empty list" (non-nil pointer to an empty slice: nothing is allowed). JSON
// keeps the difference: a nil pointer is omitted, an empty list is written as
// []. Plain []string lists have no such difference by design: an empty deny
// list denies nothing, exactly like an absent one, so ParsePolicy stores both
// as nil.
type Policy struct {
	Zone         ZoneSettings `toml:"zone" json:"zone"`
	Capabilities Capabilities `toml:"capabilities" json:"capabilities"`
	Filesystem   Filesystem   `toml:"filesystem" json:"filesystem"`
	Exec         Exec         `toml:"exec" json:"exec"`
	Network      Network      `toml:"network" json:"network"`
	Signals      Signals      `toml:"signals" json:"signals"`
	Resources    Resources    `toml:"resources" json:"resources"`
	Devices      Devices      `toml:"devices" json:"devices"`
	Syscalls     Syscalls     `toml:"syscalls" json:"syscalls"`
}

// ZoneSettings is the [zone] table. ParsePolicy fills an absent mode with
// "enforce" and an absent admission with "strict": a policy file that forgets
// them must not silently weaken the zone.
type ZoneSettings struct {
	Mode      string `toml:"mode" json:"mode"`
	Admission string `toml:"admission" json:"admission"`
}

// Capabilities is the [capabilities] table. Allowed nil keeps the OCI spec's
// capability sets; a non-nil list is the most the container may hold (the
// intersection with the spec's sets), and an empty list means none. Names are
// accepted with or without the CAP_ prefix, in any case; "ALL" is refused.
type Capabilities struct {
	Allowed *[]string `toml:"allowed" json:"allowed,omitempty"`
}

// Filesystem is the [filesystem] table. Paths are inside the container,
// absolute and clean.
type Filesystem struct {
	// WritablePaths nil: no read-only restriction from the policy. Non-nil:
	// only these trees may be opened for writing, everything else is
	// read-only (an empty list makes the whole tree read-only).
	WritablePaths *[]string `toml:"writable_paths" json:"writable_paths,omitempty"`
	// ReadOnly trees may not be written even below a writable path.
	ReadOnly []string `toml:"read_only" json:"read_only,omitempty"`
	// Deny trees may not be opened at all.
	Deny []string `toml:"deny" json:"deny,omitempty"`
}

// Exec is the [exec] table. An empty Allow means any binary that is not
// denied may be executed.
type Exec struct {
	Allow []string `toml:"allow" json:"allow,omitempty"`
	Deny  []string `toml:"deny" json:"deny,omitempty"`
}

// Network is the [network] table.
type Network struct {
	Mode string `toml:"mode" json:"mode,omitempty"`
	// Subnet is the IPv4 subnet of a bridged zone (ParseSubnet); empty:
	// one carved from DefaultSubnetPool. Read when the zone's first
	// bridged member is created.
	Subnet string `toml:"subnet" json:"subnet,omitempty"`
	// IPv6 gives a bridged zone's members an IPv6 address too, from
	// Subnet6, or when that is empty from a /64 of the root's unique local
	// /48 (ULAPool). Subnet6 alone implies it.
	IPv6    bool   `toml:"ipv6" json:"ipv6,omitempty"`
	Subnet6 string `toml:"subnet6" json:"subnet6,omitempty"`
	// AllowedEgress nil: egress is not restricted. Non-nil: connect/sendmsg
	// only to these CIDR[:port] destinations (see ParseEgress); empty means no
	// egress at all, loopback included.
	AllowedEgress *[]string `toml:"allowed_egress" json:"allowed_egress,omitempty"`
	// DeniedEgress: connect/sendmsg (and every packet) to these CIDR[:port]
	// destinations is denied, whatever AllowedEgress and AllowedZones allow,
	// loopback included. It is how a policy that does not restrict egress
	// still keeps a few addresses out of reach (the standard preset's cloud
	// metadata addresses) without an allow-list of the rest of the address
	// space.
	DeniedEgress []string `toml:"denied_egress" json:"denied_egress,omitempty"`
	// AllowedZones nil: packets to and from other zones' members follow
	// AllowedEgress like any address. Non-nil: this zone's members exchange
	// packets (both ways) with the members of these zones and of their own
	// zone only; empty means with their own zone only.
	AllowedZones *[]string `toml:"allowed_zones" json:"allowed_zones,omitempty"`
}

// WantsIPv6 reports whether a bridged zone's members get an IPv6 address
// too (network.ipv6, or network.subnet6 set).
func (n *Network) WantsIPv6() bool { return n.IPv6 || n.Subnet6 != "" }

// Signals is the [signals] table. Signals and ptrace always work within a
// zone; AllowedZones lists the other zones whose tasks may signal or ptrace
// tasks of this zone.
type Signals struct {
	AllowedZones []string `toml:"allowed_zones" json:"allowed_zones,omitempty"`
}

// Resources is the [resources] table. Zero means "not set by the policy".
type Resources struct {
	CPUShares   int64    `toml:"cpu_shares" json:"cpu_shares,omitempty"`
	MemoryLimit ByteSize `toml:"memory_limit" json:"memory_limit,omitempty"`
	IOWeight    int64    `toml:"io_weight" json:"io_weight,omitempty"`
	PidsMax     int64    `toml:"pids_max" json:"pids_max,omitempty"`
}

// Devices is the [devices] table. Allowed nil keeps the OCI spec's device
// rules; a non-nil list allows only these devices (names relative to /dev,
// see LookupDevice).
type Devices struct {
	Allowed *[]string `toml:"allowed" json:"allowed,omitempty"`
}

// Syscalls is the [syscalls] table: syscall names that fail with EPERM.
type Syscalls struct {
	Deny []string `toml:"deny" json:"deny,omitempty"`
}

// List returns a non-nil list holding items, for the *[]string fields of a
// Policy: List() is the empty list ("nothing allowed"), not an absent key.
func List(items ...string) *[]string {
	l := make([]string, len(items))
	copy(l, items)
	return &l
}

// FieldError is one validation problem, keyed by the dotted TOML key it
// concerns so ParsePolicy can point at the line.
type FieldError struct {
	Key  string // e.g. "capabilities.allowed"
	Item int    // index of the offending list element, -1 for the key itself
	Msg  string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// SyscallKnown reports whether a syscall name exists for this host's
// architecture. libseccomp answers that, which this package cannot ask
// without cgo: the caller passes it in. nil checks names by form only.
type SyscallKnown func(name string) bool

// ParsePolicy decodes a TOML policy strictly, fills defaults and validates it;
// known (may be nil) checks the [syscalls] deny names. name (usually the file
// name) prefixes every error, and errors carry the line they refer to:
// `policy.toml: line 7: unknown key "filesystem.writeable_paths"`. All
// problems found are reported together, one per line.
func ParsePolicy(name string, data []byte, known SyscallKnown) (*Policy, error) {
	var p Policy
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, decodeError(name, data, err)
	}
	p.setDefaults()
	p.normalize()
	if err := errors.Join(p.Validate(), p.checkSyscalls(known)); err != nil {
		return nil, locateFieldErrors(name, data, err)
	}
	return &p, nil
}

// checkSyscalls reports the well-formed [syscalls] deny names known does
// not know: a misspelt name would otherwise deny nothing, without a word.
func (p *Policy) checkSyscalls(known SyscallKnown) error {
	if known == nil {
		return nil
	}
	var errs []error
	for i, s := range p.Syscalls.Deny {
		if validSyscallName(s) && !known(s) {
			errs = append(errs, &FieldError{Key: "syscalls.deny", Item: i, Msg: fmt.Sprintf("unknown syscall %q: libseccomp does not know it", s)})
		}
	}
	return errors.Join(errs...)
}

func (p *Policy) setDefaults() {
	if p.Zone.Mode == "" {
		p.Zone.Mode = ModeEnforce
	}
	if p.Zone.Admission == "" {
		p.Zone.Admission = AdmissionStrict
	}
}

// normalize gives every list one representation so that a parsed policy
// survives a JSON round trip unchanged: present pointer lists are non-nil
// slices, empty plain lists are nil.
func (p *Policy) normalize() {
	for _, l := range p.pointerLists() {
		if *l != nil && **l == nil {
			**l = []string{}
		}
	}
	for _, l := range p.plainLists() {
		if len(*l) == 0 {
			*l = nil
		}
	}
}

func (p *Policy) pointerLists() []**[]string {
	return []**[]string{&p.Capabilities.Allowed, &p.Filesystem.WritablePaths, &p.Network.AllowedEgress, &p.Network.AllowedZones, &p.Devices.Allowed}
}

func (p *Policy) plainLists() []*[]string {
	return []*[]string{&p.Filesystem.ReadOnly, &p.Filesystem.Deny, &p.Exec.Allow, &p.Exec.Deny,
		&p.Signals.AllowedZones, &p.Syscalls.Deny, &p.Network.DeniedEgress}
}

// Validate checks every field and returns all problems joined; each is a
// *FieldError.
func (p *Policy) Validate() error {
	var errs []error
	bad := func(key string, item int, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Item: item, Msg: fmt.Sprintf(format, args...)})
	}

	if !oneOf(p.Zone.Mode, ModeEnforce, ModeAudit, ModeLearn) {
		bad("zone.mode", -1, "must be %q, %q or %q, not %q", ModeEnforce, ModeAudit, ModeLearn, p.Zone.Mode)
	}
	if !oneOf(p.Zone.Admission, AdmissionStrict, AdmissionAudit) {
		bad("zone.admission", -1, "must be %q or %q, not %q", AdmissionStrict, AdmissionAudit, p.Zone.Admission)
	}
	if p.Capabilities.Allowed != nil {
		for i, c := range *p.Capabilities.Allowed {
			if _, err := CapabilityName(c); err != nil {
				bad("capabilities.allowed", i, "%v", err)
			}
		}
	}
	if p.Filesystem.WritablePaths != nil {
		checkPaths(bad, "filesystem.writable_paths", *p.Filesystem.WritablePaths)
	}
	checkPaths(bad, "filesystem.read_only", p.Filesystem.ReadOnly)
	checkPaths(bad, "filesystem.deny", p.Filesystem.Deny)
	checkPaths(bad, "exec.allow", p.Exec.Allow)
	checkPaths(bad, "exec.deny", p.Exec.Deny)
	checkDenyNames(bad, "filesystem.read_only", p.Filesystem.ReadOnly)
	checkDenyNames(bad, "filesystem.deny", p.Filesystem.Deny)
	checkDenyNames(bad, "exec.deny", p.Exec.Deny)
	if !oneOf(p.Network.Mode, "", NetworkIsolated, NetworkBridged, NetworkHost) {
		bad("network.mode", -1, "must be %q, %q or %q, not %q", NetworkIsolated, NetworkBridged, NetworkHost, p.Network.Mode)
	}
	if p.Network.Subnet != "" {
		if _, err := ParseSubnet(p.Network.Subnet); err != nil {
			bad("network.subnet", -1, "%v", err)
		}
	}
	if p.Network.Subnet6 != "" {
		if _, err := ParseSubnet6(p.Network.Subnet6); err != nil {
			bad("network.subnet6", -1, "%v", err)
		}
	}
	if p.Network.AllowedEgress != nil {
		for i, s := range *p.Network.AllowedEgress {
			if _, err := ParseEgress(s); err != nil {
				bad("network.allowed_egress", i, "%v", err)
			}
		}
	}
	for i, s := range p.Network.DeniedEgress {
		if _, err := ParseEgress(s); err != nil {
			bad("network.denied_egress", i, "%v", err)
		}
	}
	if p.Network.AllowedZones != nil {
		checkZoneNames(bad, "network.allowed_zones", *p.Network.AllowedZones)
	}
	checkZoneNames(bad, "signals.allowed_zones", p.Signals.AllowedZones)
	p.Resources.validate(bad)
	if p.Devices.Allowed != nil {
		for i, d := range *p.Devices.Allowed {
			if _, ok := LookupDevice(d); !ok {
				bad("devices.allowed", i, "unknown device %q (known: %s)", d, strings.Join(deviceNames(), ", "))
			}
		}
	}
	for i, s := range p.Syscalls.Deny {
		if !validSyscallName(s) {
			bad("syscalls.deny", i, "invalid syscall name %q: must match [a-z_][a-z0-9_]{0,63}", s)
		}
	}
	return errors.Join(errs...)
}

func oneOf(s string, allowed ...string) bool { return slices.Contains(allowed, s) }

func checkPaths(bad func(key string, item int, format string, args ...any), key string, paths []string) {
	for i, p := range paths {
		switch {
		case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
			bad(key, i, "path %q contains invalid UTF-8 or a NUL byte", p)
		case !filepath.IsAbs(p):
			bad(key, i, "path %q must be absolute (paths are inside the container)", p)
		case filepath.Clean(p) != p:
			bad(key, i, "path %q is not clean; write %q", p, filepath.Clean(p))
		}
	}
}

// MaxDenyName is the longest final name, in bytes, of a deny or read_only
// path: the bpf-lsm backend denies a file created at a listed path after
// the list was resolved by looking the name up in a fixed-size key
// (bpf.FileNameMax), and a longer name could not be denied that way.
const MaxDenyName = 63

func checkDenyNames(bad func(key string, item int, format string, args ...any), key string, paths []string) {
	for i, p := range paths {
		if n := len(filepath.Base(p)); n > MaxDenyName {
			bad(key, i, "the last name of %q is %d bytes long, at most %d are supported: deny its directory instead", p, n, MaxDenyName)
		}
	}
}

func checkZoneNames(bad func(key string, item int, format string, args ...any), key string, names []string) {
	for i, n := range names {
		if err := ValidateName("zone name", n); err != nil {
			bad(key, i, "%v", err)
		}
	}
}

func (r Resources) validate(bad func(key string, item int, format string, args ...any)) {
	// Ranges are the kernel's: cpu.shares 2..262144 (v1), io.weight 1..10000 (v2).
	if r.CPUShares < 0 || r.CPUShares == 1 || r.CPUShares > 262144 {
		bad("resources.cpu_shares", -1, "%d out of range: 0 (unset) or 2..262144", r.CPUShares)
	}
	if r.MemoryLimit < 0 {
		bad("resources.memory_limit", -1, "%d must not be negative (0 = unset)", r.MemoryLimit)
	}
	if r.IOWeight < 0 || r.IOWeight > 10000 {
		bad("resources.io_weight", -1, "%d out of range: 0 (unset) or 1..10000", r.IOWeight)
	}
	if r.PidsMax < 0 {
		bad("resources.pids_max", -1, "%d must not be negative (0 = unset)", r.PidsMax)
	}
}

// validSyscallName accepts the shape of a Linux syscall name. Whether the
// running kernel and architecture have it is the seccomp layer's question.
func validSyscallName(s string) bool {
	if len(s) == 0 || len(s) > 64 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// CapabilityName returns the OCI spelling ("CAP_NET_BIND_SERVICE") of a
// capability name given with or without the CAP_ prefix, in any case. Names
// the capability package does not know are errors, and so is "ALL": a policy
// lists what it allows.
func CapabilityName(name string) (string, error) {
	u := strings.ToUpper(name)
	short := strings.TrimPrefix(u, "CAP_")
	if short == "ALL" {
		return "", fmt.Errorf("capability %q: a policy lists capabilities one by one, \"ALL\" is not allowed", name)
	}
	for _, c := range capability.ListKnown() {
		if strings.ToUpper(c.String()) == short {
			return "CAP_" + short, nil
		}
	}
	return "", fmt.Errorf("unknown capability %q", name)
}

// Digest is the hex sha256 of the canonical JSON of the policy (see
// Canonical). Two policies with the same digest enforce the same rules; verify
// compares the stored digest with the one pushed to the kernel.
func (p *Policy) Digest() string {
	b, err := json.Marshal(p.Canonical())
	if err != nil {
		// Policy holds only strings, integers and slices of strings.
		panic(fmt.Sprintf("zone: marshal policy: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Equal reports whether p and q enforce the same rules. Two nil policies are
// equal; nil and non-nil are not.
func (p *Policy) Equal(q *Policy) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.Digest() == q.Digest()
}

// Canonical returns a copy in which every list is sorted and free of
// duplicates (they are sets), capability names are in OCI spelling and egress
// rules in ParseEgress's canonical form. Absent lists stay absent. Entries that
// do not parse are kept verbatim, so Canonical never hides an invalid value.
func (p *Policy) Canonical() *Policy {
	c := p.Clone()
	c.normalize()
	if c.Capabilities.Allowed != nil {
		for i, n := range *c.Capabilities.Allowed {
			if oci, err := CapabilityName(n); err == nil {
				(*c.Capabilities.Allowed)[i] = oci
			}
		}
	}
	if c.Network.AllowedEgress != nil {
		for i, s := range *c.Network.AllowedEgress {
			if e, err := ParseEgress(s); err == nil {
				(*c.Network.AllowedEgress)[i] = e.String()
			}
		}
	}
	for i, s := range c.Network.DeniedEgress {
		if e, err := ParseEgress(s); err == nil {
			c.Network.DeniedEgress[i] = e.String()
		}
	}
	for _, l := range c.pointerLists() {
		if *l != nil {
			**l = sortedSet(**l)
		}
	}
	for _, l := range c.plainLists() {
		*l = sortedSet(*l)
	}
	return c
}

func sortedSet(l []string) []string {
	if l == nil {
		return nil
	}
	slices.Sort(l)
	return slices.Compact(l)
}

// Clone returns a deep copy.
func (p *Policy) Clone() *Policy {
	c := *p
	srcPtr, srcPlain := p.pointerLists(), p.plainLists()
	for i, l := range c.pointerLists() {
		if src := *srcPtr[i]; src != nil {
			*l = List(*src...)
		}
	}
	for i, l := range c.plainLists() {
		*l = slices.Clone(*srcPlain[i])
	}
	return &c
}

// maxPolicySize bounds a policy file: real policies are a few KiB, and a
// reference to /dev/zero or /proc/kcore must fail at once, not eat memory.
const maxPolicySize = 1 << 20

// LoadPolicy resolves a policy reference given on the command line: a preset
// name ("strict", or "preset:strict") or the path of a TOML file. A file that
// happens to be named like a preset is reached with a path ("./strict"). The
// second result describes the source for the zone record: "preset:NAME" or
// "file:ABSPATH". known checks syscall names (see ParsePolicy).
func LoadPolicy(ref string, known SyscallKnown) (*Policy, string, error) {
	return loadPolicy(ref, false, known)
}

// LoadAnnotationPolicy resolves the org.rauha.policy annotation of a bundle.
// Whoever wrote the bundle may have less privilege than the (root) rauha that
// reads it, so a policy file named there must also be world-readable: a file
// whose mode keeps it from others (/etc/shadow, /proc/self/environ, a 0600
// key) is refused unread, and its content never reaches an error message or
// a log the bundle's author may see.
func LoadAnnotationPolicy(ref string, known SyscallKnown) (*Policy, string, error) {
	return loadPolicy(ref, true, known)
}

func loadPolicy(ref string, public bool, known SyscallKnown) (*Policy, string, error) {
	if ref == "" {
		return nil, "", fmt.Errorf("empty policy reference: give a preset (%s) or a policy file path", strings.Join(PresetNames(), ", "))
	}
	if name, ok := strings.CutPrefix(ref, "preset:"); ok || slices.Contains(PresetNames(), ref) {
		if !ok {
			name = ref
		}
		p, err := Preset(name)
		if err != nil {
			return nil, "", err
		}
		return p, "preset:" + name, nil
	}
	data, err := readPolicyFile(ref, public)
	if err != nil {
		return nil, "", err
	}
	p, err := ParsePolicy(ref, data, known)
	if err != nil {
		return nil, "", err
	}
	abs, err := filepath.Abs(ref)
	if err != nil {
		return nil, "", fmt.Errorf("resolve policy path %q: %w", ref, err)
	}
	return p, "file:" + abs, nil
}

// readPolicyFile reads a policy file with every check made on the opened
// file, so a symlink or a rename cannot swap what was checked for what is
// read. Symlinks are followed (as for any path the caller gives); the rules
// apply to the file they lead to. A FIFO or a device is refused without
// blocking (O_NONBLOCK), anything longer than maxPolicySize without reading
// it, and with public only a world-readable file is read. The real uid must
// be able to read it too (access(2) checks the real uid), so a rauha run with more privilege than its caller
// (setuid, capabilities) reads nothing the caller could not.
func readPolicyFile(ref string, public bool) ([]byte, error) {
	f, err := os.OpenFile(ref, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("read policy %q (not a preset: %s): %w", ref, strings.Join(PresetNames(), ", "), unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read policy %q: %w", ref, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("policy %q is not a regular file (%s)", ref, FileType(fi.Mode()))
	case fi.Size() > maxPolicySize:
		return nil, fmt.Errorf("policy %q is %d bytes, more than the %d KiB rauha accepts", ref, fi.Size(), maxPolicySize>>10)
	case public && fi.Mode().Perm()&0o004 == 0:
		return nil, fmt.Errorf("policy %q is not world-readable (mode %04o): a policy named by a bundle annotation must be readable by everyone", ref, fi.Mode().Perm())
	}
	if err := unix.Access(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.R_OK); err != nil {
		return nil, fmt.Errorf("policy %q: not readable by the calling user: %w", ref, err)
	}
	// The size was checked on open; the limit also bounds a file that grows
	// while it is read, and pseudo-files that report no size.
	data, err := io.ReadAll(io.LimitReader(f, maxPolicySize+1))
	if err != nil {
		return nil, fmt.Errorf("read policy %q: %w", ref, err)
	}
	if len(data) > maxPolicySize {
		return nil, fmt.Errorf("policy %q is more than the %d KiB rauha accepts", ref, maxPolicySize>>10)
	}
	return data, nil
}

// FileType names the kind of a file that is not a regular one, for errors.
func FileType(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParsePolicyJSON is ParsePolicy for a policy in JSON (the keys are the
// TOML file's), as a Kubernetes ZonePolicy carries it: decoded strictly,
// defaults filled, validated the same way.
func ParsePolicyJSON(name string, data []byte, known SyscallKnown) (*Policy, error) {
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.setDefaults()
	p.normalize()
	if err := errors.Join(p.Validate(), p.checkSyscalls(known)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}
