package zone

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// decodeError turns a go-toml error into "name: line N: message" lines that
// name the offending key. Operators fix policy files from these messages, so
// they say which key and which line, never a Go type.
func decodeError(name string, data []byte, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			de := &strict.Errors[i]
			line, _ := de.Position()
			errs = append(errs, fmt.Errorf("%s: line %d: unknown key %q", name, line, strings.Join(de.Key(), ".")))
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		key := strings.Join(de.Key(), ".")
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if got, ok := mismatchedKind(msg); ok && key != "" {
			want := expectedKinds()[key]
			if want == "" {
				want = "another type"
			}
			return fmt.Errorf("%s: line %d: %s: expected %s, got a TOML %s", name, line, key, want, got)
		}
		if strings.Contains(msg, "array table") {
			msg = "expected a table, got an array of tables"
		}
		if key != "" && !strings.Contains(msg, key) {
			msg = key + ": " + msg
		}
		return fmt.Errorf("%s: line %d: %s", name, line, msg)
	}
	var size *errSize
	if errors.As(err, &size) {
		const key = "resources.memory_limit"
		if line, ok := keyLines(data)[key]; ok {
			return fmt.Errorf("%s: line %d: %s: %v", name, line, key, size)
		}
		return fmt.Errorf("%s: %s: %v", name, key, size)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// mismatchedKind extracts "integer" from go-toml's
// "cannot decode TOML integer into struct field ... of type string".
func mismatchedKind(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "cannot decode TOML ")
	if !ok {
		return "", false
	}
	kind, _, ok := strings.Cut(rest, " into ")
	return kind, ok
}

// expectedKinds describes, for every key of a policy file, what its value must
// be; derived from the Policy type so it cannot drift from it.
func expectedKinds() map[string]string {
	kinds := map[string]string{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			key := prefix + f.Tag.Get("toml")
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == reflect.TypeFor[ByteSize]():
				kinds[key] = `an integer (bytes) or a size string like "512M"`
			case ft.Kind() == reflect.Struct:
				kinds[key] = "a table"
				walk(key+".", ft)
			case ft.Kind() == reflect.Slice:
				kinds[key] = "an array of strings"
			case ft.Kind() == reflect.String:
				kinds[key] = "a string"
			case ft.Kind() == reflect.Int64:
				kinds[key] = "an integer"
			}
		}
	}
	walk("", reflect.TypeFor[Policy]())
	return kinds
}

// locateFieldErrors prefixes each validation error with the policy name and
// the line of its key.
func locateFieldErrors(name string, data []byte, err error) error {
	lines := keyLines(data)
	all := flatten(err)
	out := make([]error, 0, len(all))
	for _, e := range all {
		var fe *FieldError
		if errors.As(e, &fe) {
			key := fe.Key
			if fe.Item >= 0 {
				key = fmt.Sprintf("%s[%d]", fe.Key, fe.Item)
			}
			if line, ok := lineOf(lines, key); ok {
				out = append(out, fmt.Errorf("%s: line %d: %w", name, line, e))
				continue
			}
		}
		out = append(out, fmt.Errorf("%s: %w", name, e))
	}
	return errors.Join(out...)
}

// flatten lists the errors joined in err, at any depth.
func flatten(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var all []error
	for _, e := range j.Unwrap() {
		all = append(all, flatten(e)...)
	}
	return all
}

// lineOf finds the line of key (which may end in a list index), or of its
// nearest enclosing key.
func lineOf(lines map[string]int, key string) (int, bool) {
	for {
		if line, ok := lines[key]; ok {
			return line, true
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			return 0, false
		}
		key = key[:i]
	}
}

// keyLines maps every dotted key and table header of a TOML document to the
// line it appears on (the first time). It uses go-toml's unstable parser
// because the decoder only reports positions for its own errors; parsing stops
// quietly at a syntax error, which the decoder reports itself.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyOf(&p, nil, n.Key(), lines)
		case unstable.KeyValue:
			recordKeyValue(&p, table, n, lines)
		}
	}
	return lines
}

func recordKeyValue(p *unstable.Parser, table []string, n *unstable.Node, lines map[string]int) {
	key := keyOf(p, table, n.Key(), lines)
	switch v := n.Value(); v.Kind {
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				recordKeyValue(p, key, c, lines)
			}
		}
	case unstable.Array:
		// Elements get their own lines so that an error about the third
		// entry of a multi-line list points at that entry.
		joined := strings.Join(key, ".")
		i := 0
		for it := v.Children(); it.Next(); {
			if c := it.Node(); c.Kind != unstable.Comment {
				if c.Raw.Length > 0 {
					lines[fmt.Sprintf("%s[%d]", joined, i)] = p.Shape(c.Raw).Start.Line
				}
				i++
			}
		}
	}
}

// keyOf appends the parts of a (dotted) key to prefix, recording the line of
// every intermediate key so that errors about "a" in "a.b = 1" find it too.
func keyOf(p *unstable.Parser, prefix []string, it unstable.Iterator, lines map[string]int) []string {
	key := append([]string(nil), prefix...)
	line := 0
	for it.Next() {
		k := it.Node()
		if line == 0 {
			line = p.Shape(k.Raw).Start.Line
		}
		key = append(key, string(k.Data))
		joined := strings.Join(key, ".")
		if _, seen := lines[joined]; !seen {
			lines[joined] = line
		}
	}
	return key
}
