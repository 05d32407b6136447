package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestBadInputAgainstALiveBroker sends what Kafka answers by closing the
// connection (a frame over socket.request.max.bytes, a garbage header, an
// undecodable body, an unknown API key) to a real node, each on its own
// connection, while a franz-go client keeps producing and consuming on
// another; and checks Kafka's answer to ApiVersions v127.
func TestBadInputAgainstALiveBroker(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config("socket.request.max.bytes", "1048576"))
	const topic = "bystander"
	createTopic(t, c.Admin(t), topic, 1, nil)
	producer := c.Client(t, kgo.DefaultProduceTopic(topic))
	consumer := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	addr := c.Node(1).Addr()
	ctx := testCtx(t, time.Minute)

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produceFrame := wire.AppendRequest(nil, 7, nil, produce)
	truncatedBody := produceFrame[:len(produceFrame)-3]
	binary.BigEndian.PutUint32(truncatedBody, uint32(len(truncatedBody)-4))

	cases := map[string][]byte{
		"frame over socket.request.max.bytes": {0, 0x20, 0, 0}, // 2 MiB announced
		"garbage header":                      {0, 0, 0, 3, 0xde, 0xad, 0xbe},
		"undecodable body":                    truncatedBody,
		"unknown API key":                     {0, 0, 0, 10, 0x4e, 0x20, 0, 0, 0, 0, 0, 1, 0xff, 0xff},
	}
	for name, payload := range cases {
		t.Run(name, func(t *testing.T) {
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(payload); err != nil {
				t.Fatal(err)
			}
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			var b [1]byte
			n, err := nc.Read(b[:])
			if n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the connection was not closed: read %d bytes, %v", n, err)
			}
			// The bystander client carries on.
			v := []byte(name)
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
				t.Fatalf("produce after %s: %v", name, err)
			}
			fs := consumer.PollRecords(ctx, 1)
			if fs.NumRecords() != 1 || string(fs.Records()[0].Value) != name {
				t.Fatalf("consume after %s: %d records, errors %v", name, fs.NumRecords(), fs.Errors())
			}
		})
	}

	t.Run("ApiVersions v127", func(t *testing.T) {
		wc, err := wire.Dial(ctx, "tcp", addr, "test")
		if err != nil {
			t.Fatal(err)
		}
		defer wc.Close()
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(127)
		resp, err := wc.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.Version != 0 || av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0 {
			t.Fatalf("got v%d error %d with %d keys; want v0 UNSUPPORTED_VERSION with the served keys", av.Version, av.ErrorCode, len(av.ApiKeys))
		}
		// The client picks a version from the list and carries on.
		req = kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp, err = wc.Request(context.Background(), req)
		if err != nil || resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
			t.Fatalf("ApiVersions v3 after the fallback: %v", err)
		}
	})
}
