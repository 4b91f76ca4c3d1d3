// Command skein looks into a Skein store, local or deployed: the runs,
// their steps and events, hooks and streams, as the quickstart, your own
// worker or a deployed stack recorded them. It can also cancel a run,
// resume a hook, rerun a finished run, and retry or fail a run held because
// its code no longer replays its log. On a deployed stack, skein dlq redrive
// lists the dead letters with the runs they would resume, and moves them
// back to the work queue.
//
//	skein runs list
//	skein runs show wrun_01J...
//	skein -db my.db hooks list
//
// The store is a localworld file (default ./skein-quickstart.db, or $SKEIN_DB).
// A command that only reads (runs list/show/events/watch/export, hooks list,
// streams, patches check, the pages of skein ui) never takes the store's
// lock: it opens the file read-only (localworld Config.ReadOnly), catching
// up with the records a worker appends before each read, so it works on
// live runs, and a worker (or the quickstart) can start while it runs,
// however long (runs watch, streams read -follow, ui). The commands that
// change the store (runs cancel, rerun, retry, fail; hooks resume;
// -repair-torn-tail) take the lock for as long as they run; while another
// process holds it they wait up to a second, then exit 1 naming the process
// (on Linux, from /proc/locks). skein ui takes the lock for each action
// only, and refuses the action (403, with the reason) while a worker holds
// the store.
//
// A read-only view was chosen over the worker serving its store on a local
// socket: it needs nothing from the program that holds the store (any
// worker, the quickstart, a test, a program built before this), no socket
// file to create, secure and clean up, and no second protocol to keep in
// step with world.Storage; the log format already makes it cheap, since a
// commit is one appended, checksummed record and a compaction renames a
// whole new file into place. Its price is that changes still wait for the
// worker to stop.
//
// The log is the only local format. A store in the bbolt format, which
// earlier versions could make, is refused by every command, naming the one
// that copies its runs to a new log-format store (the old file is only
// read, under guards against what a damaged bbolt file makes bbolt do):
//
//	skein store migrate -from skein.db -to skein.skein
//
// A process killed in the middle of a write (kill -9, power loss)
// can leave the store's last record incomplete; skein then refuses the store
// and says so (a reader looks twice, since a record being written is whole a
// moment later), and -repair-torn-tail drops that record (its commit was
// never acknowledged) and keeps everything before it:
//
//	skein -repair-torn-tail runs list
//
// With -stack NAME (or $SKEIN_STACK) skein works on a deployed stack
// instead: it reads the table, queue and bucket from the TableName,
// QueueUrl and BucketName outputs of the CloudFormation stack sam deploy
// created (DescribeStacks), and opens a dynamoworld World on them; -table,
// -queue-url and -bucket (or $SKEIN_TABLE, $SKEIN_QUEUE_URL, $SKEIN_BUCKET)
// name the resources directly, -region and -endpoint (or the SDK's
// AWS_REGION, AWS_ENDPOINT_URL_*) where to send requests:
//
//	skein -stack orders runs list -status failed
//	skein -sam-env default runs list   # stack_name and region of ./samconfig.toml
//
// skein runs export writes runs' logs as history files for a replay check,
// which runs in the user's own tests (skeintest.CheckHistories): replaying
// a log needs the user's workflow code, which this command does not link.
//
// skein init writes a new project of your own: a Go module with a workflow
// and its test, a Lambda main serving it (skeinlambda.Start), the AWS SAM
// template of its stack, samconfig.toml and a Makefile:
//
//	skein init -module github.com/you/orders orders
//
// Its make validate runs sam validate --lint, or cfn-lint alone where the
// SAM CLI is not installed. skein version prints the Skein module version
// (or the VCS revision) the binary was built from. Run "skein help" for
// every command.
package main
