module example.com

go 1.26

require (
	github.com/google/uuid v0.0.0
	github.com/skeinflow/skein v0.0.0
	golang.org/x/sync v0.0.0
)

replace (
	github.com/google/uuid => ./deps/uuid
	github.com/skeinflow/skein => ./deps/skein
	golang.org/x/sync => ./deps/sync
)
