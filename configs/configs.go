// Package configs holds clhost's global custom-layer configuration: global.xml and its
// kernels, embedded in the binary and loaded before any user configuration. Setting
// CLHOST_CONFIG_DIR replaces it with every *.xml file of another folder.
package configs

import (
	"embed"
	"io/fs"
)

//go:embed global.xml kernels/*.cl
var files embed.FS

// FS is the embedded global configuration; GlobalFile is its XML inside FS.
var FS fs.FS = files

// GlobalFile is the path of the global configuration inside FS.
const GlobalFile = "global.xml"

// EnvDir is the environment variable that points at a replacement folder.
const EnvDir = "CLHOST_CONFIG_DIR"
