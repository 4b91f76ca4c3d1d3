// Command skein looks into a local Skein store: the runs, their steps and
// events, hooks and streams, as the quickstart or your own worker recorded
// them. It can also cancel a run and resume a hook.
//
//	skein runs list
//	skein runs show wrun_01J...
//	skein -db my.db hooks list
//
// The store is a localworld file (default ./skein-quickstart.db, or $SKEIN_DB).
// A store is used by one process at a time: stop the program that holds it
// first. Run "skein help" for every command.
package main
