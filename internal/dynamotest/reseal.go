package dynamotest

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/skeinflow/skein/internal/itemsum"
)

// Reseal recomputes the checksums of an item of the World's table as the
// World writes them (each stored byte value's CRC-32C in a sibling
// attribute, and the item's checksum mark; a hook item's binding of its
// run, hook ID and token to its key), as someone who edits an item and
// recomputes the CRCs would: tests use it to reach the layer behind the
// checksums (package encrypt's sealed runs).
func Reseal(it map[string]types.AttributeValue) {
	itemsum.Seal(it)
	itemsum.SealHook(it)
}
