package landlock

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Rules is a zone's filesystem, exec and scoping policy for one container.
// Paths are absolute paths as the container sees them.
type Rules struct {
	// Writable, when non-empty, makes everything else read-only.
	Writable []string
	// ReadOnly paths are never writable, even beneath a Writable path.
	ReadOnly []string
	// Deny paths cannot be opened, executed, listed or changed at all.
	Deny []string
	// ExecAllow, when non-empty, allows executing only beneath these paths.
	ExecAllow []string
	// ExecDeny paths cannot be executed, nor read: Landlock does not check
	// mmap(PROT_EXEC), so a readable denied binary could still be run by
	// the dynamic loader ("ld.so /denied/binary") or a shell could read a
	// denied script. A denied directory stays listable.
	ExecDeny []string
	// ScopeSignals forbids signalling processes outside the domain (ABI 6).
	ScopeSignals bool
	// ScopeAbstractUnix forbids connecting to abstract unix sockets created
	// outside the domain (ABI 6).
	ScopeAbstractUnix bool
}

func (r Rules) restrictsWrites() bool {
	return len(r.Writable) > 0 || len(r.ReadOnly) > 0 || len(r.Deny) > 0
}

// RestrictsExec reports whether a domain of r handles the execute right,
// and so can refuse an execve (a denied path is not executable either).
func (r Rules) RestrictsExec() bool {
	return len(r.ExecAllow) > 0 || len(r.ExecDeny) > 0 || len(r.Deny) > 0
}

// Summary says what a ruleset enforces, for the admission check and verify.
type Summary struct {
	// ABI is the Landlock ABI the ruleset was built for (0: unsupported).
	ABI int
	// RuleCount is the number of path rules added to the ruleset.
	RuleCount int
	// Unavailable lists controls the rules ask for that this kernel cannot
	// enforce: "filesystem", "exec" (no Landlock), "filesystem.truncate"
	// (ABI < 3: truncate(2) and O_TRUNC escape read-only rules),
	// "signals.scope", "abstract_unix.scope" (ABI < 6).
	Unavailable []string
	// Skipped lists rule paths that do not exist in the rootfs and so got no
	// rule (which for an allow rule means the access stays denied).
	Skipped []string
	// Notes explains side effects worth showing an operator: symlinks that
	// were resolved, directories that lost rights to protect a path beneath.
	Notes []string
}

// ErrUnsupported is returned when the kernel has no usable Landlock.
var ErrUnsupported = errors.New("landlock is not available on this kernel")

// plan is what a Rules value asks of a given ABI.
type plan struct {
	abi     int
	handled uint64 // filesystem rights the domain restricts
	scoped  uint64
	summary Summary
}

func newPlan(abi int, r Rules) plan {
	p := plan{abi: abi, summary: Summary{ABI: abi}}
	fs := supportedFS(abi)
	if r.restrictsWrites() {
		p.handled |= fs & (accessWriteFile | accessWriteTree)
	}
	if len(r.Deny) > 0 {
		p.handled |= fs & accessRead
	}
	if len(r.ExecDeny) > 0 {
		p.handled |= fs & unix.LANDLOCK_ACCESS_FS_READ_FILE
	}
	if r.RestrictsExec() {
		p.handled |= fs & accessExec
	}
	var un []string
	if abi < 1 {
		if r.restrictsWrites() {
			un = append(un, "filesystem")
		}
		if r.RestrictsExec() {
			un = append(un, "exec")
		}
	} else if abi < 3 && r.restrictsWrites() {
		un = append(un, "filesystem.truncate")
	}
	if r.ScopeSignals {
		if abi >= 6 {
			p.scoped |= unix.LANDLOCK_SCOPE_SIGNAL
		} else {
			un = append(un, "signals.scope")
		}
	}
	if r.ScopeAbstractUnix {
		if abi >= 6 {
			p.scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		} else {
			un = append(un, "abstract_unix.scope")
		}
	}
	p.summary.Unavailable = un
	return p
}

// CreateRuleset creates an empty Landlock ruleset that restricts what r asks
// for, without any path rule yet: nothing is allowed until Populate adds the
// rules. It returns a nil file (and no error) when r restricts nothing, and
// ErrUnsupported (with Summary.Unavailable filled) when the kernel has no
// Landlock, so an audit-admission caller can start the container knowingly.
//
// Create, Wrap and start the container init, then Populate with
// /proc/<init pid>/root once the init waits on the exec fifo: Landlock
// ignores rules on a directory that has a file system mounted over it, and
// libcontainer creates missing mount points (such as /etc/resolv.conf) only
// during its setup. The ruleset fd is shared, so rules added after the init
// received it are part of the domain the shim enters.
func CreateRuleset(r Rules) (*os.File, Summary, error) {
	p := newPlan(ABI(), r)
	if p.abi < 1 {
		return nil, p.summary, fmt.Errorf("create landlock ruleset: %w (CONFIG_SECURITY_LANDLOCK and lsm=landlock are needed)", ErrUnsupported)
	}
	if p.handled == 0 && p.scoped == 0 {
		return nil, p.summary, nil
	}
	fd, err := createRuleset(p.handled, p.scoped)
	if err != nil {
		return nil, p.summary, fmt.Errorf("landlock_create_ruleset(fs=%#x, scoped=%#x): %w", p.handled, p.scoped, err)
	}
	return os.NewFile(uintptr(fd), "landlock-ruleset"), p.summary, nil
}

// Populate adds the path rules for r to ruleset (made by CreateRuleset from
// the same r). rootfs must be the container's root with its mounts in place,
// /proc/<init pid>/root (a rule on the bundle's rootfs/tmp is ignored once a
// tmpfs is mounted there). Every path is resolved inside rootfs, so an
// image's symlinks cannot point rules out of it.
func Populate(ruleset *os.File, rootfs string, r Rules) (Summary, error) {
	p := newPlan(ABI(), r)
	if ruleset == nil || p.handled == 0 {
		return p.summary, nil
	}
	root, err := unix.Open(rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return p.summary, fmt.Errorf("open rootfs %q: %w", rootfs, err)
	}
	defer unix.Close(root)
	b := &builder{ruleset: int(ruleset.Fd()), plan: &p}
	if err := b.build(root, r); err != nil {
		return p.summary, fmt.Errorf("landlock rules for rootfs %q: %w", rootfs, err)
	}
	return p.summary, nil
}

// BuildRuleset is CreateRuleset followed by Populate, for processes started
// in a running container (exec): pass /proc/<init pid>/root as rootfs.
func BuildRuleset(rootfs string, r Rules) (*os.File, Summary, error) {
	f, sum, err := CreateRuleset(r)
	if err != nil || f == nil {
		return f, sum, err
	}
	sum, err = Populate(f, rootfs, r)
	if err != nil {
		f.Close()
		return nil, sum, err
	}
	return f, sum, nil
}

// Rights are decided per category on a tree of rule paths. At each path a
// category is inherited, granted, or revoked; the nearest setting wins, and a
// revocation wins over a grant at the same path (ReadOnly over Writable,
// ExecDeny over ExecAllow, Deny over all).
type category int

const (
	catRead category = iota
	catWriteFile
	catWriteTree
	catExec
	catReadFile // reading files only: exec deny keeps directories listable
	numCats
)

var catRights = [numCats]uint64{accessRead, accessWriteFile, accessWriteTree, accessExec, unix.LANDLOCK_ACCESS_FS_READ_FILE}

type node struct {
	name     string
	children map[string]*node
	set      [numCats]int8 // 0 inherit, 1 grant, -1 revoke
	fd       int
	dir      bool
}

func (n *node) child(name string) *node {
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c := n.children[name]
	if c == nil {
		c = &node{name: name, fd: -1}
		n.children[name] = c
	}
	return c
}

func (n *node) apply(grant bool, cats ...category) {
	for _, c := range cats {
		switch {
		case !grant:
			n.set[c] = -1
		case n.set[c] == 0:
			n.set[c] = 1
		}
	}
}

// want is the set of rights n's subtree should have, given its parent's.
func (n *node) want(parent uint64) uint64 {
	w := parent
	for c, s := range n.set {
		if s > 0 {
			w |= catRights[c]
		} else if s < 0 {
			w &^= catRights[c]
		}
	}
	return w
}

// floor is the set of rights that can be granted on n for its whole subtree:
// those every rule path beneath still wants. Directory-only rights do not
// matter to a file, so a denied file does not take READ_DIR from its parents.
func (n *node) floor(w uint64) uint64 {
	f := w
	if !n.dir {
		f |= dirOnlyRights
	}
	for _, c := range n.children {
		f &= c.floor(c.want(w))
	}
	return f
}

func (n *node) sortedChildren() []*node {
	out := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

type builder struct {
	ruleset int
	plan    *plan
	tree    *node
}

func (b *builder) build(root int, r Rules) error {
	b.tree = &node{name: "/", fd: root, dir: true}
	defer b.tree.closeAll()
	kinds := []struct {
		label string
		paths []string
		grant bool
		cats  []category
	}{
		{"writable", r.Writable, true, []category{catWriteFile, catWriteTree}},
		{"read-only", r.ReadOnly, false, []category{catWriteFile, catWriteTree}},
		{"deny", r.Deny, false, []category{catRead, catWriteFile, catWriteTree, catExec}},
		{"exec allow", r.ExecAllow, true, []category{catExec}},
		{"exec deny", r.ExecDeny, false, []category{catReadFile, catExec}},
	}
	for _, k := range kinds {
		for _, p := range k.paths {
			comps, err := resolveInRoot(root, p)
			if errors.Is(err, errNotInRoot) {
				b.plan.summary.Skipped = append(b.plan.summary.Skipped, fmt.Sprintf("%s %s: not in the rootfs", k.label, p))
				continue
			}
			if err != nil {
				return fmt.Errorf("%s %s: %w", k.label, p, err)
			}
			if canon := "/" + strings.Join(comps, "/"); canon != path.Clean(p) {
				b.plan.summary.Notes = append(b.plan.summary.Notes,
					fmt.Sprintf("%s %s applies to %s (symlinks resolved; rules attach to the inode)", k.label, p, canon))
			}
			b.tree.insert(comps).apply(k.grant, k.cats...)
		}
	}
	// Ordinary programs write to /dev/null, ttys and /dev/pts even when the
	// zone allows writes nowhere else; an explicit rule on /dev still wins.
	if len(r.Writable) > 0 {
		if comps, err := resolveInRoot(root, "/dev"); err == nil {
			b.tree.insert(comps).apply(true, catWriteFile)
		} else if !errors.Is(err, errNotInRoot) {
			return fmt.Errorf("implicit /dev rule: %w", err)
		}
	}
	if err := b.tree.openAll("/"); err != nil {
		return err
	}
	h := b.plan.handled
	base := uint64(accessRead)
	if len(r.Writable) == 0 {
		base |= accessWriteFile | accessWriteTree
	}
	if len(r.ExecAllow) == 0 {
		base |= accessExec
	}
	return b.emit(b.tree, b.tree.want(base&h)&h, 0, "/")
}

func (n *node) insert(comps []string) *node {
	for _, c := range comps {
		n = n.child(c)
	}
	return n
}

// openAll opens every rule path of the tree below n. A component that is a
// symlink now although resolveInRoot saw none means the rootfs changed.
func (n *node) openAll(at string) error {
	for _, c := range n.sortedChildren() {
		p := path.Join(at, c.name)
		fd, err := openChild(n.fd, c.name, unix.O_PATH)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		c.fd = fd
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return fmt.Errorf("%s became a symlink while the rules were built, retry", p)
		case unix.S_IFDIR:
			c.dir = true
		}
		if err := c.openAll(p); err != nil {
			return err
		}
	}
	return nil
}

// closeAll closes the fds openAll opened (the root's belongs to the caller).
func (n *node) closeAll() {
	for _, c := range n.children {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		c.closeAll()
	}
}

// emit adds the rules for n, whose subtree wants w, when its ancestors'
// rules already grant granted. Landlock only adds rights going down a path,
// so a right that something beneath n must not have cannot be granted on n
// itself: it is granted on each of n's other entries instead (the sibling
// technique), and the walk goes on into the rule paths.
func (b *builder) emit(n *node, w, granted uint64, at string) error {
	h := b.plan.handled
	if !n.dir {
		return b.add(n.fd, w&fileRights&^granted, at)
	}
	m := n.floor(w) & w
	if err := b.add(n.fd, m&^granted, at); err != nil {
		return err
	}
	g := granted | m
	if lost := w & dirOnlyRights &^ g; lost != 0 {
		b.plan.summary.Notes = append(b.plan.summary.Notes,
			fmt.Sprintf("%s: %s denied on the directory itself, to protect a path beneath it", at, rightNames(lost)))
	}
	if rest := w &^ g; rest != 0 {
		if err := b.emitSiblings(n, rest, at); err != nil {
			return err
		}
	}
	for _, c := range n.sortedChildren() {
		if err := b.emit(c, c.want(w)&h, g, path.Join(at, c.name)); err != nil {
			return err
		}
	}
	return nil
}

// emitSiblings grants rest on every entry of directory n that is not itself
// on a rule path. Entries created later get nothing from here: that fails
// closed, which is why Populate should run once the rootfs is complete.
func (b *builder) emitSiblings(n *node, rest uint64, at string) error {
	dfd, err := unix.Openat(n.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", at, err)
	}
	dir := os.NewFile(uintptr(dfd), at)
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return fmt.Errorf("list %s: %w", at, err)
	}
	sort.Strings(names)
	count := 0
	for _, name := range names {
		if _, onPath := n.children[name]; onPath {
			continue
		}
		p := path.Join(at, name)
		fd, err := openChild(n.fd, name, unix.O_PATH)
		if errors.Is(err, unix.ENOENT) {
			continue // removed since it was listed
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				// Access through a symlink is checked on its target's path.
			case unix.S_IFDIR:
				err = b.add(fd, rest, p)
				count++
			default:
				err = b.add(fd, rest&fileRights, p)
				count++
			}
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	b.plan.summary.Notes = append(b.plan.summary.Notes,
		fmt.Sprintf("%s: %s granted entry by entry (%d entries); entries created here later do not get them", at, rightNames(rest), count))
	return nil
}

func (b *builder) add(fd int, rights uint64, at string) error {
	if rights == 0 {
		return nil
	}
	if err := addPathRule(b.ruleset, fd, rights); err != nil {
		return fmt.Errorf("landlock_add_rule %s (%s): %w", at, rightNames(rights), err)
	}
	b.plan.summary.RuleCount++
	return nil
}

var rightLabels = []struct {
	bit  uint64
	name string
}{
	{unix.LANDLOCK_ACCESS_FS_EXECUTE, "execute"},
	{unix.LANDLOCK_ACCESS_FS_WRITE_FILE, "write_file"},
	{unix.LANDLOCK_ACCESS_FS_READ_FILE, "read_file"},
	{unix.LANDLOCK_ACCESS_FS_READ_DIR, "read_dir"},
	{unix.LANDLOCK_ACCESS_FS_REMOVE_DIR, "remove_dir"},
	{unix.LANDLOCK_ACCESS_FS_REMOVE_FILE, "remove_file"},
	{unix.LANDLOCK_ACCESS_FS_MAKE_CHAR, "make_char"},
	{unix.LANDLOCK_ACCESS_FS_MAKE_DIR, "make_dir"},
	{unix.LANDLOCK_ACCESS_FS_MAKE_REG, "make_reg"},
	{unix.LANDLOCK_ACCESS_FS_MAKE_SOCK, "make_sock"},
	{unix.LANDLOCK_ACCESS_FS_MAKE_FIFO, "make_fifo"},
	{unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK, "make_block"},
	{unix.LANDLOCK_ACCESS_FS_MAKE_SYM, "make_sym"},
	{unix.LANDLOCK_ACCESS_FS_REFER, "refer"},
	{unix.LANDLOCK_ACCESS_FS_TRUNCATE, "truncate"},
}

// rightNames renders a right mask for messages, e.g. "read_file,read_dir".
func rightNames(mask uint64) string {
	var out []string
	for _, l := range rightLabels {
		if mask&l.bit != 0 {
			out = append(out, l.name)
		}
	}
	return strings.Join(out, ",")
}
