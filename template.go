// Package skein is the root of the Skein module. Its one export is the
// deployment template: the AWS SAM template (template.yaml, beside this
// file) of the stack every Skein project deploys, the event table, the
// queues, the bucket, the two functions and their roles. `skein init`
// writes a project's template from it, so Skein's own stack and the
// projects it generates share one definition of the resources, policies,
// encryption and retention settings.
//
// The workflows themselves are written with package workflow and served on
// Lambda by package skeinlambda.
package skein

import _ "embed" // template.yaml

//go:embed template.yaml
var template string

// Template returns template.yaml: its functions' CodeUri is
// examples/lambda/, the bootstrap of Skein's own stack.
func Template() string { return template }
