package zone

import "fmt"

// maxNameLen bounds names because they become file names (<root>/<id>/,
// <root>/events/<zone>.jsonl) and a single path component is limited to 255
// bytes on every Linux file system.
const maxNameLen = 255

// ValidateName checks a container id or zone name. Both follow runc's rule for
// container ids (^[\w+\-.]+$, not "." or ".."): a container's default zone is
// named after its id, and both end up as single path components, so "." and
// ".." would escape the directory they are joined to. kind names the thing in
// the error, e.g. "container id" or "zone name".
func ValidateName(kind, name string) error {
	if len(name) == 0 || len(name) > maxNameLen || name == "." || name == ".." || !nameChars(name) {
		return fmt.Errorf("invalid %s %q: must match [A-Za-z0-9_+.-]{1,%d} and not be \".\" or \"..\"", kind, name, maxNameLen)
	}
	return nil
}

func nameChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '+', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}
