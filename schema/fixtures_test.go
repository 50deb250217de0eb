package schema_test

import "testing"

func allFixtures(t testing.TB) []fixture {
	var all []fixture
	all = append(all, lifecycleFixtures()...)
	all = append(all, summaryFixtures()...)
	all = append(all, planSelectionFixtures()...)
	all = append(all, planFixtures()...)
	all = append(all, limitsFixtures(t)...)
	all = append(all, topologyFixtures()...)
	all = append(all, detailFixtures()...)
	all = append(all, eventFixtures()...)
	all = append(all, readFixtures()...)
	return all
}
