// chatprefix.go: every --chat flag takes a chat id or a unique prefix of one
// (at least minChatPrefix characters), as audit and chats print them.

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// minChatPrefix is the shortest prefix --chat takes.
const minChatPrefix = 4

// listedChats bounds the ids an ambiguous prefix's error lists.
const listedChats = 10

var (
	// errNoChat is a --chat that no chat's id starts with.
	errNoChat = errors.New("no chat")
	// errAmbiguousChat is a --chat prefix of several chats' ids.
	errAmbiguousChat = errors.New("ambiguous chat prefix")
	// errShortChat is a --chat prefix shorter than minChatPrefix.
	errShortChat = errors.New("chat prefix too short")
)

// chatPrefixes is what resolveChat needs of the store.
type chatPrefixes interface {
	ChatsByPrefix(ctx context.Context, prefix string, limit int) ([]string, error)
}

// resolveChat is the id of the one chat whose id is arg or starts with it;
// "" stays "". An unknown or ambiguous prefix is an error saying so (listing
// the matching ids), a too short one a usage error (exit code 2).
func resolveChat(ctx context.Context, st chatPrefixes, arg string) (string, error) {
	if arg == "" {
		return "", nil
	}
	ids, err := st.ChatsByPrefix(ctx, arg, listedChats+1)
	if err != nil {
		return "", err
	}
	if slices.Contains(ids, arg) {
		return arg, nil
	}
	if utf8.RuneCountInString(arg) < minChatPrefix {
		return "", &exitError{2, fmt.Errorf("--chat %q: %w: give the chat's id or at least its first %d characters", arg, errShortChat, minChatPrefix)}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("--chat %q: %w starts with %q (threadline chats lists them)", arg, errNoChat, arg)
	case 1:
		return ids[0], nil
	}
	more := ""
	if len(ids) > listedChats {
		ids, more = ids[:listedChats], ", …"
	}
	return "", fmt.Errorf("--chat %q: %w: it starts %s: %s%s; give more characters", arg, errAmbiguousChat, chatCount(len(ids), more), strings.Join(ids, ", "), more)
}

// chatCount is "2 chats' ids" or, with more, "more than 10 chats' ids".
func chatCount(n int, more string) string {
	if more != "" {
		return fmt.Sprintf("more than %d chats' ids", n)
	}
	return fmt.Sprintf("%d chats' ids", n)
}
