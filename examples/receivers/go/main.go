// A webhook receiver that verifies Switchyard's signatures, with Go's standard
// library only. Run:  WEBHOOK_SECRET=... go run . [PORT]
//
// It accepts a request when either signature verifies:
//
//	X-Signature        lowercase hex HMAC-SHA1 of the raw body, key = the secret as written
//	webhook-signature  Standard Webhooks: "v1,<base64 HMAC-SHA256>" entries, space-separated;
//	                   key = base64-decoded secret after "whsec_",
//	                   message = "<webhook-id>.<webhook-timestamp>.<raw body>"
//
// and answers 204; otherwise 401 with the reason. It prints each verified event.
package main

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	tolerance    = 5 * time.Minute // Standard Webhooks: refuse replays of old requests
	maxBodyBytes = 1 << 20
)

type verifier struct {
	secret      []byte // X-Signature key: the secret as written
	standardKey []byte // Standard Webhooks key; nil when the secret is not base64
}

// sameText compares in constant time, so the answer's timing tells nothing about the expected value.
func sameText(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }

// checkXSignature returns "" when the header is absent, "ok", or why it failed.
func (v verifier) checkXSignature(h http.Header, body []byte) string {
	given := h.Values("X-Signature")
	if len(given) == 0 {
		return ""
	}
	mac := hmac.New(sha1.New, v.secret)
	mac.Write(body)
	if sameText(hex.EncodeToString(mac.Sum(nil)), given[0]) {
		return "ok"
	}
	return "X-Signature does not match"
}

func (v verifier) checkStandard(h http.Header, body []byte, now time.Time) string {
	signatures := h.Values("webhook-signature")
	if len(signatures) == 0 {
		return ""
	}
	if v.standardKey == nil {
		return "webhook-signature cannot be checked: WEBHOOK_SECRET is not a whsec_ secret"
	}
	id, timestamp := h.Get("webhook-id"), h.Get("webhook-timestamp")
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if id == "" || err != nil || strings.HasPrefix(timestamp, "+") || strings.HasPrefix(timestamp, "-") {
		return "webhook-id or webhook-timestamp missing or malformed"
	}
	if d := now.Sub(time.Unix(seconds, 0)); d > tolerance || d < -tolerance {
		return "webhook-timestamp is more than 5 minutes off"
	}
	mac := hmac.New(sha256.New, v.standardKey)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	expected := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	// One entry per secret while the sender rotates; other versions than v1 are skipped.
	for _, entry := range strings.Split(signatures[0], " ") {
		if sig, ok := strings.CutPrefix(entry, "v1,"); ok && sameText(expected, sig) {
			return "ok"
		}
	}
	return "webhook-signature does not match"
}

// verify returns the scheme that verified, or an error with the reasons none did.
func (v verifier) verify(h http.Header, body []byte) (string, error) {
	results := []struct{ scheme, result string }{
		{"X-Signature", v.checkXSignature(h, body)},
		{"Standard Webhooks", v.checkStandard(h, body, time.Now())},
	}
	var reasons []string
	for _, r := range results {
		if r.result == "ok" {
			return r.scheme, nil
		}
		if r.result != "" {
			reasons = append(reasons, r.result)
		}
	}
	if len(reasons) == 0 {
		return "", errors.New("no X-Signature or webhook-signature header")
	}
	return "", errors.New(strings.Join(reasons, "; "))
}

func (v verifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	// Verify the raw bytes as received: decoding and re-encoding JSON in Go changes
	// them (key order, escapes), and the signature is over Switchyard's bytes.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	scheme, err := v.verify(r.Header, body)
	if err != nil {
		fmt.Printf("refused (%v): %s %s\n", err, r.Method, r.URL.Path)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	fmt.Printf("verified by %s: %s\n", scheme, body)
	w.WriteHeader(http.StatusNoContent)
}

// standardKey is the base64 after "whsec_", or nil when it is not base64.
func standardKey(secret string) []byte {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil
	}
	return key
}

func main() {
	secret := os.Getenv("WEBHOOK_SECRET")
	if secret == "" {
		log.Fatal("set WEBHOOK_SECRET to the destination's sharedSecret, e.g. WEBHOOK_SECRET=whsec_... go run .")
	}
	port := os.Getenv("PORT")
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	if port == "" {
		port = "4000"
	}
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	v := verifier{secret: []byte(secret), standardKey: standardKey(secret)}
	if v.standardKey == nil {
		fmt.Println("note: WEBHOOK_SECRET is not base64 (whsec_...), so only X-Signature can verify")
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", listener.Addr())
	server := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(server.Serve(listener))
}
