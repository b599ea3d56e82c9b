package suite_test

import (
	"testing"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// A library's regressions run on its own card only: simulate cards gives
// every card the same -extra folders, and each card keeps the scenarios
// that name its lock.
func TestExtraForKeepsTheScenariosOfTheCardsLock(t *testing.T) {
	extra, err := suite.LoadExtra([]string{"../examples/php-symfony/regressions", "../examples/php-laravel/regressions", "../adapters/golibs/regressions", "../scenarios/gc-pause.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	names := func(es []suite.Extra) map[string]bool {
		m := map[string]bool{}
		for _, e := range es {
			m[e.Name] = true
		}
		return m
	}
	for lock, want := range map[string][]string{
		"symfony-redis":         {"extra/symfony-redis-refresh-lost"},
		"laravel-redis":         {"extra/phpredis-read-reconnect"},
		"laravel-redis-cluster": {"extra/phpredis-cluster-failover-crash"},
		"redsync":               {"extra/redsync-retry-release", "extra/redsync-retry-release-one-master"},
		"redsync-cluster":       {"extra/redsync-cluster-retry-release"},
		"single":                {"extra/gc-pause"},
		"symfony-combined":      nil,
	} {
		got := names(suite.ExtraFor(extra, runner.Subject{Info: lockimpl.Info{Name: lock}}))
		if len(got) != len(want) {
			t.Errorf("card of %s runs %v, want %v", lock, got, want)
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("card of %s runs %v, want %v", lock, got, want)
			}
		}
	}
}
