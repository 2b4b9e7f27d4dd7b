// socket.go: the Socket Mode side of the fake: apps.connections.open hands out
// ws://127.0.0.1:port/ws, where the fake says hello, pushes envelopes, pings,
// and collects the client's acks.

package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// upgrader accepts the Origin slack-go's Socket Mode client sends.
var upgrader = websocket.Upgrader{CheckOrigin: func(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || o == "https://api.slack.com"
}}

type wsConn struct {
	c    *websocket.Conn
	wmu  sync.Mutex
	done chan struct{}
	once sync.Once
}

func (c *wsConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.c.WriteJSON(v)
}

func (c *wsConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.c.Close()
	})
}

func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn := &wsConn{c: c, done: make(chan struct{})}
	s.mu.Lock()
	s.wsConns = append(s.wsConns, conn)
	ping := s.PingInterval
	s.mu.Unlock()
	_ = conn.write(map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "fake", "approximate_connection_time": 3600},
		"connection_info": map[string]any{"app_id": AppID}})
	go func() {
		t := time.NewTicker(ping)
		defer t.Stop()
		for {
			select {
			case <-conn.done:
				return
			case <-t.C:
				conn.wmu.Lock()
				err := c.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second))
				conn.wmu.Unlock()
				if err != nil {
					conn.close()
					return
				}
			}
		}
	}()
	defer func() {
		conn.close()
		s.mu.Lock()
		for i, x := range s.wsConns {
			if x == conn {
				s.wsConns = append(s.wsConns[:i:i], s.wsConns[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
	}()
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		if len(ack.Payload) == 0 {
			ack.Payload = json.RawMessage("null")
		}
		s.mu.Lock()
		s.acks[ack.EnvelopeID] = ack.Payload
		if w, ok := s.ackWaiters[ack.EnvelopeID]; ok {
			w <- ack.Payload
			delete(s.ackWaiters, ack.EnvelopeID)
		}
		s.mu.Unlock()
	}
}

// Connected reports how many Socket Mode clients are connected.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.wsConns)
}

// WaitConnected waits until a Socket Mode client is connected.
func (s *Server) WaitConnected(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for s.Connected() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("slacktest: no socket mode client connected in %s", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Envelope pushes a Socket Mode envelope ("events_api", "interactive",
// "slash_commands") with payload to every connected client (to one of them,
// in turn in connection order, when Spread is set) and returns its
// envelope_id. retry sets retry_attempt, as Slack does when an envelope was not
// acked in time.
func (s *Server) Envelope(typ string, payload any, retry int) (string, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("env-%08d", s.seq)
	conns := append([]*wsConn(nil), s.wsConns...)
	spread, n := s.Spread, s.spreadNext
	s.spreadNext++
	s.mu.Unlock()
	if len(conns) == 0 {
		return "", fmt.Errorf("slacktest: no socket mode client")
	}
	if spread {
		// Like Slack with several connections: each envelope to one of them.
		conns = conns[n%len(conns):][:1]
	}
	env := map[string]any{"type": typ, "envelope_id": id, "payload": json.RawMessage(raw),
		"accepts_response_payload": typ != "events_api", "retry_attempt": retry, "retry_reason": ""}
	if retry > 0 {
		env["retry_reason"] = "timeout"
	}
	for _, c := range conns {
		if err := c.write(env); err != nil {
			return "", err
		}
	}
	return id, nil
}

// WaitAck waits for the client's ack of an envelope and returns its payload
// ("null" when the ack carried none).
func (s *Server) WaitAck(envelopeID string, timeout time.Duration) (json.RawMessage, error) {
	s.mu.Lock()
	if p, ok := s.acks[envelopeID]; ok {
		s.mu.Unlock()
		return p, nil
	}
	w := make(chan json.RawMessage, 1)
	s.ackWaiters[envelopeID] = w
	s.mu.Unlock()
	select {
	case p := <-w:
		return p, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("slacktest: envelope %s not acked in %s", envelopeID, timeout)
	}
}

// Disconnect asks the clients to reconnect, as Slack does before it rotates
// a connection.
func (s *Server) Disconnect() {
	s.mu.Lock()
	conns := append([]*wsConn(nil), s.wsConns...)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.write(map[string]any{"type": "disconnect", "reason": "refresh_requested", "debug_info": map[string]any{"host": "fake"}})
	}
}
