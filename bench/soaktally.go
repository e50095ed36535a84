package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// The soak's tally of answers (soaktraffic.go): by kind of request and
// status, and what was wrong with them.

// soakTally counts the answers by kind and status, and what was wrong.
type soakTally struct {
	mu                                         sync.Mutex
	status                                     map[string]map[int]int
	wrong, lost, failed, expected404           int
	adds, changes, removes                     int
	firstWrong, firstLost, firstFailed, first5 []string
}

func newSoakTally() *soakTally { return &soakTally{status: map[string]map[int]int{}} }

// answer counts one answer (status 0: none; err then says why).
func (t *soakTally) answer(kind string, status int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status[kind] == nil {
		t.status[kind] = map[int]int{}
	}
	t.status[kind][status]++
	if status == 0 && err != nil {
		t.failed++
		t.firstFailed = keepFew(t.firstFailed, kind+": "+err.Error())
	}
	if status >= 500 && status != http.StatusServiceUnavailable {
		t.first5 = keepFew(t.first5, fmt.Sprintf("%s: HTTP %d", kind, status))
	}
}

func (t *soakTally) wrongSchool(kind, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wrong++
	t.firstWrong = keepFew(t.firstWrong, kind+": "+what)
}

func (t *soakTally) lostSchool(kind, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lost++
	t.firstLost = keepFew(t.firstLost, kind+": "+what)
}

func (t *soakTally) failure(kind, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed++
	t.firstFailed = keepFew(t.firstFailed, kind+": "+what)
}

func (t *soakTally) count(n *int) {
	t.mu.Lock()
	*n++
	t.mu.Unlock()
}

// keepFew appends what to list while it holds fewer than five.
func keepFew(list []string, what string) []string {
	if len(list) < 5 {
		return append(list, what)
	}
	return list
}

// totals are the answers by status over every kind, and the 5xx.
func (t *soakTally) totals() (byStatus map[int]int, all, fivexx, unavailable int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	byStatus = map[int]int{}
	for _, m := range t.status {
		for status, n := range m {
			byStatus[status] += n
			all += n
			if status >= 500 {
				fivexx += n
			}
			if status == http.StatusServiceUnavailable {
				unavailable += n
			}
		}
	}
	return byStatus, all, fivexx, unavailable
}

// brief is the tally in a line, for the progress.
func (t *soakTally) brief() string {
	byStatus, all, _, _ := t.totals()
	codes := make([]int, 0, len(byStatus))
	for s := range byStatus {
		codes = append(codes, s)
	}
	sort.Ints(codes)
	parts := make([]string, 0, len(codes))
	for _, s := range codes {
		parts = append(parts, fmt.Sprintf("%d: %d", s, byStatus[s]))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%d answers (%s), wrong school %d, lost %d, failed %d, writes %d/%d/%d",
		all, strings.Join(parts, ", "), t.wrong, t.lost, t.failed, t.adds, t.changes, t.removes)
}
