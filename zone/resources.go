package zone

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ByteSize is a memory size in bytes. In TOML and JSON it is either an
// integer (bytes) or a string with a binary unit: "512M", "512MiB", "1g",
// "4096". It is always written back as an integer.
type ByteSize int64

// errSize marks a size that failed to parse; ParsePolicy uses it to point at
// the memory_limit line, because the TOML decoder reports errors from
// UnmarshalText of non-string values without a position.
type errSize struct{ text string }

func (e *errSize) Error() string {
	return fmt.Sprintf("invalid size %q: want bytes or a number with a unit K, M, G, T or P (binary, e.g. \"512M\")", e.text)
}

var sizeUnits = map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}

// ParseByteSize parses a size as described on ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, &errSize{s}
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, &errSize{s}
	}
	unit := strings.ToUpper(s[i:])
	unit = strings.TrimSuffix(unit, "B")
	if len(unit) == 2 && unit[1] == 'I' {
		unit = unit[:1]
	}
	mult, ok := sizeUnits[unit]
	if !ok || n > math.MaxInt64/mult {
		return 0, &errSize{s}
	}
	return ByteSize(n * mult), nil
}

// UnmarshalText reads the string form.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// UnmarshalJSON accepts an integer or a size string.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		*b = ByteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("size must be an integer or a string like \"512M\", not %s", data)
	}
	return b.UnmarshalText([]byte(s))
}

// Device is a device node a policy may allow, with its device number. Minor
// -1 stands for every minor number (terminals under /dev/pts).
type Device struct {
	Name         string // relative to /dev, as written in [devices] allowed
	Type         string // "c" (character device)
	Major, Minor int64
}

// knownDevices are the devices OCI runtimes create (plus a few commonly passed
// through); the numbers are fixed by the kernel's devices.txt.
func knownDevices() []Device {
	return []Device{
		{"console", "c", 5, 1},
		{"full", "c", 1, 7},
		{"fuse", "c", 10, 229},
		{"kvm", "c", 10, 232},
		{"net/tun", "c", 10, 200},
		{"null", "c", 1, 3},
		{"ptmx", "c", 5, 2},
		{"pts", "c", 136, -1},
		{"random", "c", 1, 8},
		{"tty", "c", 5, 0},
		{"urandom", "c", 1, 9},
		{"zero", "c", 1, 5},
	}
}

// LookupDevice finds a device by the name used in [devices] allowed.
func LookupDevice(name string) (Device, bool) {
	for _, d := range knownDevices() {
		if d.Name == name {
			return d, true
		}
	}
	return Device{}, false
}

func deviceNames() []string {
	var names []string
	for _, d := range knownDevices() {
		names = append(names, d.Name)
	}
	return names
}
