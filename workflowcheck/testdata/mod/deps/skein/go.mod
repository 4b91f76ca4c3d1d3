module github.com/skeinflow/skein

go 1.26
