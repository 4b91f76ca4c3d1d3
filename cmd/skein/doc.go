// Command skein looks into a local Skein store: the runs, their steps and
// events, hooks and streams, as the quickstart or your own worker recorded
// them. It can also cancel a run, resume a hook, and retry or fail a run
// held because its code no longer replays its log.
//
//	skein runs list
//	skein runs show wrun_01J...
//	skein -db my.db hooks list
//
// The store is a localworld file (default ./skein-quickstart.db, or $SKEIN_DB).
// A store is used by one process at a time: stop the program that holds it
// first. A process killed in the middle of a write (kill -9, power loss)
// can leave the store's last record incomplete; skein then refuses the store
// and says so, and -repair-torn-tail drops that record (its commit was never
// acknowledged) and keeps everything before it:
//
//	skein -repair-torn-tail runs list
//
// skein init writes a new project of your own: a Go module with a workflow
// and its test, a Lambda main serving it (skeinlambda.Start), the AWS SAM
// template of its stack, samconfig.toml and a Makefile:
//
//	skein init -module github.com/you/orders orders
//
// Run "skein help" for every command.
package main
