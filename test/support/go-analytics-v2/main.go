// The seed's Go client library, analytics-go v2 (gopkg.in/segmentio/analytics-go.v2,
// v2.0.0), unchanged, as a producer uses it: queue calls, let them flush, then Close().
// Used by test/integration/gateway-analytics-go.test.ts.
//
//	go run . <endpoint> <write key> <user id> <calls>
//
// It queues <calls> track calls (the client's Size, so they flush as one batch), prints
// "queued", waits for a line on stdin (the test sends it once the calls are in Kafka),
// then calls Close() and prints "closed". Verbose: the library logs each answer on stderr.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"

	analytics "gopkg.in/segmentio/analytics-go.v2"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: go-analytics-v2 <endpoint> <write key> <user id> <calls>")
		os.Exit(1)
	}
	endpoint, writeKey, user := os.Args[1], os.Args[2], os.Args[3]
	calls, err := strconv.Atoi(os.Args[4])
	if err != nil || calls < 1 {
		fmt.Fprintln(os.Stderr, "calls must be a positive number")
		os.Exit(1)
	}
	client := analytics.New(writeKey)
	client.Endpoint = endpoint
	client.Size = calls
	client.Interval = time.Hour
	client.Verbose = true
	for i := 0; i < calls; i++ {
		if err := client.Track(&analytics.Track{UserId: user, Event: "Go Client Closed", Properties: map[string]interface{}{"n": i}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Println("queued")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	client.Close()
	fmt.Println("closed")
}
