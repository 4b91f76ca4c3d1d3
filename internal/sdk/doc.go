// Package sdk is the implementation of Skein's SDK. Users import its three
// facades, which hold aliases of its types and thin wrappers of its
// functions: package workflow (workflow code), package client (starting,
// steering and reading runs) and package worker (hosting). The comments
// here are the full reference; package workflow's doc is the guide.
//
// What users must not call is a function here, not a method of an aliased
// type (an alias shows every exported method): ClientWorld, AtRest,
// RunState, StartJSON, CheckLog, CloneRegistry, Replace, Workflows and
// OptionsOf serve Skein's own packages (handler, webui, skeinhttp,
// skeintest, cmd/skein), as do IsInternalToken, IsPermanent,
// IsWebhookDelivery, DefaultVersion and the webhook constants.
package sdk
