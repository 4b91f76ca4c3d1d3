// Package watch is Skein's one polling watch: the world.Watcher it runs
// over any World that cannot push.
//
// Watch and Cursor use a World's own Watcher when it has one (the local
// world pushes at every commit) and a Poller over the World's read API
// otherwise, so watching works on any World. A World that cannot push but
// reads more cheaply than through its read API (dynamoworld) runs a Poller
// over its own PollSource. EventsAfter reads a run's events after a
// sequence number through the read API.
//
// The package depends only on world (world/worldtest checks watching
// through it).
package watch
