package dynamoworld

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Resources names the table, queue and bucket of a World.
type Resources struct {
	Table  string
	Queue  string // the queue's name; CreateResources returns its URL
	Bucket string
}

// CreateResources creates the table (pay per request, with its four GSIs
// and TTL on "ttl"), a standard queue and a bucket, for tests and
// development; production stacks declare the same in their template. Each
// that already exists is left as it is. It returns the queue's URL.
func CreateResources(ctx context.Context, c Clients, r Resources) (queueURL string, err error) {
	if err := CreateTable(ctx, c.DynamoDB, r.Table); err != nil {
		return "", err
	}
	q, err := c.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(r.Queue)})
	if err != nil {
		return "", sqsErr("CreateQueue", r.Queue, err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(r.Bucket)}); err != nil {
		var owned *s3types.BucketAlreadyOwnedByYou
		if !errors.As(err, &owned) {
			return "", s3Err("CreateBucket", r.Bucket, "", err)
		}
	}
	return aws.ToString(q.QueueUrl), nil
}

// CreateTable creates the World's table and waits until it is active:
// partition key pk and sort key sk (strings); GSIs gs1 (g1, gsk; keys only),
// gs2 (g2, gsk; keys and st), gs3 (g3, gsk; keys only) and gs4 (g4, gsk;
// keys only: runs by attribute); TTL on "ttl"; and
// the item that records its SchemaVersion. A table that exists already is
// left as it is.
func CreateTable(ctx context.Context, ddb *dynamodb.Client, table string) error {
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	gsi := func(name, pk string, p types.Projection) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrGSK), KeyType: types.KeyTypeRange},
			},
			Projection: &p,
		}
	}
	keysOnly := types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			s(attrPK), s(attrSK), s(attrG1), s(attrG2), s(attrG3), s(attrG4), s(attrGSK),
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(indexAll, attrG1, keysOnly),
			gsi(indexWorkflow, attrG2, types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{aStatus}}),
			gsi(indexStatus, attrG3, keysOnly),
			gsi(indexAttr, attrG4, keysOnly),
		},
	})
	if err != nil {
		var inUse *types.ResourceInUseException
		if errors.As(err, &inUse) {
			return nil
		}
		return ddbErr("CreateTable", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(ddb, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		return ddbErr("DescribeTable", table, fmt.Errorf("waiting for the table: %w", err))
	}
	_, err = ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return ddbErr("UpdateTimeToLive", table, err)
	}
	return putSchema(ctx, ddb, table)
}

// DeleteResources deletes what CreateResources made (the bucket's objects
// first). Missing resources are not an error.
func DeleteResources(ctx context.Context, c Clients, r Resources, queueURL string) error {
	var errs []error
	if _, err := c.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(r.Table)}); err != nil && !notFoundCode(errorCode(err)) {
		errs = append(errs, ddbErr("DeleteTable", r.Table, err))
	}
	if queueURL != "" {
		if _, err := c.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)}); err != nil && !notFoundCode(errorCode(err)) {
			errs = append(errs, sqsErr("DeleteQueue", queueURL, err))
		}
	}
	if err := emptyBucket(ctx, c.S3, r.Bucket); err != nil {
		errs = append(errs, err)
	} else if _, err := c.S3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(r.Bucket)}); err != nil && !notFoundCode(errorCode(err)) {
		errs = append(errs, s3Err("DeleteBucket", r.Bucket, "", err))
	}
	return errors.Join(errs...)
}

func emptyBucket(ctx context.Context, c *s3.Client, bucket string) error {
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if notFoundCode(errorCode(err)) {
				return nil
			}
			return s3Err("ListObjectsV2", bucket, "", err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]s3types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = s3types.ObjectIdentifier{Key: o.Key}
		}
		if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}}); err != nil {
			return s3Err("DeleteObjects", bucket, "", err)
		}
	}
	return nil
}
