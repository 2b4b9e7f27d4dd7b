// Skills: applying selected skills to a prompt per the adapter's strategy.

package registry

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrInvalidSkill is returned by ApplySkills for a skill whose name could
// break out of its trigger (spaces, newlines, a leading '-') or whose
// SKILL.md path is missing or relative under SkillsInstructions, and for an
// unknown strategy.
var ErrInvalidSkill = errors.New("invalid skill")

// Skill is one selected skill: its name (the directory name of its
// SKILL.md) and the absolute path of its SKILL.md.
type Skill struct {
	Name string
	Path string
}

var skillName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`) // at most 128 bytes

// ApplySkills returns prompt with the selected skills applied per strategy:
//
//   - SkillsSlash: one "/name" trigger per line, a blank line, then the prompt
//     (Claude Code runs a leading slash command as the skill);
//   - SkillsDollar: "Use these skills: $a, $b." then a blank line and the
//     prompt (Codex resolves "$name" mentions);
//   - SkillsInstructions: a short instruction listing each skill's SKILL.md
//     path to read and follow, then the prompt;
//   - SkillsNone (or no skills): the prompt unchanged.
//
// Duplicate names are applied once, in first-seen order.
func ApplySkills(prompt string, strategy SkillStrategy, skills []Skill) (string, error) {
	if strategy == "" {
		strategy = SkillsNone
	}
	switch strategy {
	case SkillsNone, SkillsSlash, SkillsDollar, SkillsInstructions:
	default:
		return "", fmt.Errorf("%w: unknown strategy %q", ErrInvalidSkill, strategy)
	}
	seen := map[string]bool{}
	var sel []Skill
	for _, s := range skills {
		if len(s.Name) > 128 || !skillName.MatchString(s.Name) {
			return "", fmt.Errorf("%w: name %q", ErrInvalidSkill, s.Name)
		}
		if strategy == SkillsInstructions && (s.Path == "" || !filepath.IsAbs(s.Path) || strings.ContainsAny(s.Path, "\r\n")) {
			return "", fmt.Errorf("%w: %s needs an absolute SKILL.md path, got %q", ErrInvalidSkill, s.Name, s.Path)
		}
		if !seen[s.Name] {
			seen[s.Name] = true
			sel = append(sel, s)
		}
	}
	if strategy == SkillsNone || len(sel) == 0 {
		return prompt, nil
	}
	var b strings.Builder
	switch strategy {
	case SkillsSlash:
		for _, s := range sel {
			b.WriteString("/" + s.Name + "\n")
		}
	case SkillsDollar:
		names := make([]string, len(sel))
		for i, s := range sel {
			names[i] = "$" + s.Name
		}
		fmt.Fprintf(&b, "Use these skills: %s.\n", strings.Join(names, ", "))
	case SkillsInstructions:
		b.WriteString("Before you start, read and follow these skills (each SKILL.md describes when and how to use it):\n")
		for _, s := range sel {
			fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Path)
		}
	}
	b.WriteString("\n")
	b.WriteString(prompt)
	return b.String(), nil
}
