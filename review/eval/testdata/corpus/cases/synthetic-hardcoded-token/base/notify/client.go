// Package notify posts release notes to the project's issue tracker.
package notify

import (
	"errors"
	"net/http"
	"os"
	"strings"
)

// Client posts comments with a token read from the environment.
type Client struct {
	HTTP  *http.Client
	Token string
}

// New returns a client whose token comes from NOTIFY_TOKEN.
func New() (*Client, error) {
	token := os.Getenv("NOTIFY_TOKEN")
	if token == "" {
		return nil, errors.New("notify: NOTIFY_TOKEN is not set")
	}
	return &Client{HTTP: http.DefaultClient, Token: token}, nil
}

// Post sends one comment body to url.
func (c *Client) Post(url, body string) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
