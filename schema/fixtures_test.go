package schema_test

func allFixtures() []fixture {
	var all []fixture
	all = append(all, lifecycleFixtures()...)
	return all
}
