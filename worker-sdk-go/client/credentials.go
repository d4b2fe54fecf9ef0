package client

import (
	"encoding/json"
	"fmt"
	"os"
)

// Credentials is a credentials file as `npm start` (.orbit/dev.credentials.json) and
// `orbit-admin bootstrap` write it.
type Credentials struct {
	// URL is the gateway's base URL (e.g. http://127.0.0.1:8080).
	URL           string `json:"url"`
	Token         string `json:"token"`
	ApplicationID string `json:"application_id"`
	NamespaceID   string `json:"namespace_id"`
	Environment   string `json:"environment"`
	// QueueID is the id of the first queue the file names (`initial` for `npm start`).
	QueueID string `json:"queue_id"`
	// Queues maps each queue's name to its id.
	Queues map[string]string `json:"queues"`
	Scopes []string          `json:"scopes"`
	// MySQLDSN is the database's DSN as a URL (mysql://user:pass@host:port/db), written by
	// `npm start` for its embedded database; empty otherwise.
	MySQLDSN string `json:"mysql_dsn"`
}

// LoadCredentials reads a credentials file. A file without a token is an error: nothing could be
// called with it.
func LoadCredentials(path string) (*Credentials, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("orbit: credentials: %w", err)
	}
	var c Credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("orbit: credentials %s: %w", path, err)
	}
	if c.Token == "" {
		return nil, fmt.Errorf("orbit: credentials %s: no token", path)
	}
	return &c, nil
}

// NewClient returns a client for the file's gateway and token.
func (c *Credentials) NewClient(opts ...Option) *Client { return New(c.URL, c.Token, opts...) }
