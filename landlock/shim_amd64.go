package landlock

import _ "embed"

//go:embed shim/shim-amd64
var shimBinary []byte
