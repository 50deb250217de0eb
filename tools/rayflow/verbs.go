package main

import "flag"

// verbArgs splits the positional words of a command with verbs ("tasks
// show ID", "schedules remove NAME") into its verb and the verb's
// arguments. arity gives each verb's number of arguments; an unknown
// verb, a wrong number of arguments or no verb at all prints the usage
// and returns exitUsage (-1 to go on).
func verbArgs(fs *flag.FlagSet, words []string, arity map[string]int) (verb string, rest []string, code int) {
	if len(words) == 0 {
		fs.Usage()
		return "", nil, exitUsage
	}
	verb, rest = words[0], words[1:]
	if n, ok := arity[verb]; !ok || len(rest) != n {
		fs.Usage()
		return "", nil, exitUsage
	}
	return verb, rest, -1
}

// givenFlags is the set of flags the command line set (by name).
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}
