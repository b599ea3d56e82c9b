package register

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrRejected means the resource refused a stale fencing token.
var ErrRejected = errors.New("rejected by the resource: stale fencing token")

// Client talks to a Server. Not safe for concurrent use.
type Client struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
}

// Dial returns a client; the connection is opened lazily.
func Dial(addr string) *Client { return &Client{addr: addr} }

// Read returns the value of the empty key's register.
func (c *Client) Read(client, lease string, fence int64) (int64, error) {
	return c.ReadKey("", client, lease, fence)
}

// Write stores v in the empty key's register.
func (c *Client) Write(client, lease string, fence, v int64) error {
	return c.WriteKey("", client, lease, fence, v)
}

// ReadKey returns the value of a key's register.
func (c *Client) ReadKey(key, client, lease string, fence int64) (int64, error) {
	resp, err := c.do(fmt.Sprintf("READ %s %s %d%s", client, lease, fence, keyArg(key)))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimPrefix(resp, "OK "), 10, 64)
}

// WriteKey stores v in a key's register.
func (c *Client) WriteKey(key, client, lease string, fence, v int64) error {
	_, err := c.do(fmt.Sprintf("WRITE %s %s %d %d%s", client, lease, fence, v, keyArg(key)))
	return err
}

func keyArg(key string) string {
	if key == "" {
		return ""
	}
	return " " + key
}

// Close drops the connection.
func (c *Client) Close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

func (c *Client) do(req string) (string, error) {
	if strings.ContainsAny(req, "\n\r") {
		return "", fmt.Errorf("resource: request contains a newline")
	}
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 2*time.Second)
		if err != nil {
			return "", err
		}
		c.conn, c.r = conn, bufio.NewReader(conn)
	}
	if _, err := c.conn.Write([]byte(req + "\n")); err != nil {
		c.Close()
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.Close()
		return "", err
	}
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "REJECTED"):
		return "", ErrRejected
	case strings.HasPrefix(line, "OK"):
		return line, nil
	default:
		return "", fmt.Errorf("resource: %s", line)
	}
}
