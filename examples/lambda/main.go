package main

import (
	"log"

	"github.com/skeinflow/skein/examples/lambda/demo"
	"github.com/skeinflow/skein/skeinlambda"
)

func main() {
	reg, err := demo.Registry()
	if err != nil {
		log.Fatal(err)
	}
	skeinlambda.Start(reg)
}
