package zone

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	good := []string{"a", "web-1", "A_b.c+d", "...", ".hidden", strings.Repeat("x", 255), "0"}
	for _, n := range good {
		if err := ValidateName("zone name", n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	bad := []string{"", ".", "..", "../x", "a/b", "a b", "ä", strings.Repeat("x", 256), "a\x00", "a:b", "a\n"}
	for _, n := range bad {
		if err := ValidateName("zone name", n); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", n)
		}
	}
	err := ValidateName("container id", "../x")
	want := `invalid container id "../x": must match [A-Za-z0-9_+.-]{1,255} and not be "." or ".."`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
}
