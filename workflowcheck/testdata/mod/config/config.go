// Package config holds settings a workflow must not read directly.
package config

import "errors"

// Region is a setting the process can change.
var Region = "eu-west-1"

// ErrMissing is a sentinel error.
var ErrMissing = errors.New("config: missing")
