// Command fetch gets URLs with Go's own net/http client, which goes through robotsgate when
// HTTP_PROXY / HTTPS_PROXY name it.
//
//	eval "$(scripts/proxy-env.sh)"      # the proxy variables and SSL_CERT_FILE
//	go run deploy/clients/fetch.go https://example.com/ https://example.com/private/x
//
// It prints one JSON line per URL: {"url", "status", "body"}.
//
// Nothing here names the proxy: http.DefaultTransport takes it from the environment
// (http.ProxyFromEnvironment, which also honours NO_PROXY), and crypto/x509 reads SSL_CERT_FILE
// in place of the system's CA list, so the proxy's certificates are the ones accepted.
// ProxyFromEnvironment never proxies "localhost" or a loopback IP address such as 127.0.0.1:
// a site on this machine must be named by a host name (one in /etc/hosts will do).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

type fetched struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

func get(client *http.Client, url string) (fetched, error) {
	response, err := client.Get(url)
	if err != nil {
		return fetched{}, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return fetched{}, err
	}
	return fetched{URL: url, Status: response.StatusCode, Body: string(body)}, nil
}

func main() {
	client := &http.Client{Timeout: 30 * time.Second}
	out := json.NewEncoder(os.Stdout)
	for _, url := range os.Args[1:] {
		result, err := get(client, url)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := out.Encode(result); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
