// Configuration: one YAML file with ${ENV} expansion.

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is the whole configuration file.
type Config struct {
	Database DatabaseConfig         `yaml:"database"`
	Workdir  string                 `yaml:"workdir"`
	Defaults DefaultsConfig         `yaml:"defaults"`
	Agents   map[string]AgentConfig `yaml:"agents"`

	// path is the file the config came from ("" for the built-in defaults).
	path string
}

// DatabaseConfig selects the store.
type DatabaseConfig struct {
	// URL is postgres://... or a SQLite path (sqlite:PATH, file:PATH or PATH).
	URL string `yaml:"url"`
}

// DefaultsConfig holds defaults for new chats.
type DefaultsConfig struct {
	Agent string `yaml:"agent"`
}

// AgentConfig overrides an agent's launch.
type AgentConfig struct {
	// Base is the built-in adapter a local profile inherits.
	Base  string            `yaml:"base"`
	Bin   string            `yaml:"bin"`
	Args  []string          `yaml:"args"`
	Env   map[string]string `yaml:"env"`
	Model string            `yaml:"model"`
}

// configPaths lists where a config file is looked for when --config is not given.
func configPaths() []string {
	paths := []string{"threadline.yaml"}
	if dir, err := os.UserConfigDir(); err == nil {
		paths = append(paths, filepath.Join(dir, "threadline", "config.yaml"))
	}
	return paths
}

// loadConfig reads the file at path, or the first default location that exists.
// No file at all gives the built-in defaults.
func loadConfig(path string) (*Config, error) {
	if path == "" {
		for _, p := range configPaths() {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	cfg := &Config{}
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := parseConfig(raw, cfg); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		cfg.path = path
	}
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func parseConfig(raw []byte, cfg *Config) error {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return err
	}
	if err := expandEnv(&root); err != nil {
		return err
	}
	if len(root.Content) == 0 {
		return nil
	}
	dec := root.Content[0]
	if err := dec.Decode(cfg); err != nil {
		return err
	}
	return cfg.validate()
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${VAR} in every scalar value. An unset variable is an error
// naming it and its line, so a missing secret is found at start, not at use.
func expandEnv(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		var missing []string
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			v, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
		if len(missing) > 0 {
			return fmt.Errorf("line %d: environment variable %s is not set", n.Line, strings.Join(missing, ", "))
		}
	}
	for _, c := range n.Content {
		if err := expandEnv(c); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validate() error {
	for id, a := range c.Agents {
		if id == "" {
			return errors.New("agents: an agent id is empty")
		}
		if a.Base != "" && a.Base == id {
			return fmt.Errorf("agents.%s: base must name another agent", id)
		}
	}
	return nil
}

func (c *Config) applyDefaults() error {
	if c.Database.URL == "" {
		dir, err := dataDir()
		if err != nil {
			return err
		}
		c.Database.URL = filepath.Join(dir, "threadline.db")
	}
	if c.Workdir != "" {
		w, err := expandHome(c.Workdir)
		if err != nil {
			return err
		}
		c.Workdir = w
	}
	return nil
}

// dataDir is $XDG_DATA_HOME/threadline (default ~/.local/share/threadline).
func dataDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the data directory: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "threadline"), nil
}

func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
}

// agent returns the configuration of an agent id, with a local profile's base resolved.
func (c *Config) agent(id string) (provider string, a AgentConfig, err error) {
	a, ok := c.Agents[id]
	if !ok {
		return id, AgentConfig{}, nil
	}
	provider = id
	if a.Base != "" {
		if _, builtin := builtins[id]; builtin {
			return "", a, fmt.Errorf("agents.%s: a profile cannot replace the built-in agent %s", id, id)
		}
		provider = a.Base
	}
	if _, ok := builtins[provider]; !ok {
		return "", a, fmt.Errorf("agents.%s: unknown agent %q (known: %s)", id, provider, strings.Join(builtinIDs(), ", "))
	}
	return provider, a, nil
}
