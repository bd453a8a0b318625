package landlock

import _ "embed"

//go:embed shim/shim-arm64
var shimBinary []byte
