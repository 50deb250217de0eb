package schema_test

func allFixtures() []fixture {
	var all []fixture
	all = append(all, lifecycleFixtures()...)
	all = append(all, summaryFixtures()...)
	all = append(all, planSelectionFixtures()...)
	all = append(all, planFixtures()...)
	return all
}
