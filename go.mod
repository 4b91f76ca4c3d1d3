module github.com/skeinflow/skein

go 1.26.8

require (
	github.com/google/btree v1.1.3 // indirect
	github.com/oklog/ulid/v2 v2.1.2 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	golang.org/x/sys v0.29.0 // indirect
)
