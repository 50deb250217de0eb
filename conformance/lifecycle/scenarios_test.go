package lifecycle_test

import (
	"math"
	"testing"

	"github.com/rayflow/rayflow/conformance/lifecycle/reducer"
	"github.com/rayflow/rayflow/gen/lifecycle"
)

const (
	vReq   = lifecycle.CommandValidationRequested
	pReq   = lifecycle.CommandPreparationRequested
	aReq   = lifecycle.CommandAdmissionRequested
	sReq   = lifecycle.CommandSubmissionRequested
	cReq   = lifecycle.CommandConsumptionRequested
	xReq   = lifecycle.CommandCancellationRequested
	dReq   = lifecycle.CommandDrainRequested
	tReq   = lifecycle.CommandTeardownRequested
	oLost  = lifecycle.CommandOwnerLost
	outerX = lifecycle.CommandOuterDeadlineExpired
)

// Prefixes shared by many scenarios.

func (b *sb) ready() *sb {
	return b.cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").
		cmd(pReq).want("PREPARE").cb(lifecycle.CallbackPrepared).want("-")
}

func (b *sb) admitted(id string, n int) *sb {
	return b.ready().cmd(aReq).invID(id).outs(n).want("ADMIT").cb(lifecycle.CallbackAdmitted).want("-")
}

func (b *sb) running(id string, n int) *sb {
	return b.admitted(id, n).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackSubmitted).want("-")
}

// succeeded runs one invocation with n outputs to HEALTHY.
func (b *sb) succeeded(id string, n int) *sb {
	b = b.running(id, n)
	for i := range n {
		b = b.cmd(cReq).inv().idx(i).want("CONSUME_OUTPUT")
		if i < n-1 {
			b = b.cb(lifecycle.CallbackOutputConsumed).want("-")
		} else {
			b = b.cb(lifecycle.CallbackOutputConsumed).want("CHECK_HEALTH")
		}
	}
	return b.cb(lifecycle.CallbackHealthy).want("-")
}

func (b *sb) tornDown() *sb {
	return b.cb(lifecycle.CallbackTornDown).want("-").expect("session_state", "TORN_DOWN", "graph_disposition", "TORN_DOWN")
}

func with(d reducer.Deadlines, f func(*reducer.Deadlines)) reducer.Deadlines { f(&d); return d }

func TestScenarioDefinitions(t *testing.T) {
	t.Parallel()
	ss := &scenarioSet{t: t, seen: map[string]bool{}}
	defineCommands(t, ss)
	defineCallbacks(t, ss)
	defineExpiry(t, ss)
	defineOuter(t, ss)
	defineCancellation(t, ss)
	defineOwnerLoss(t, ss)
	defineRejections(t, ss)
	defineFailClosed(t, ss)
	defineSnapshots(t, ss)
	if len(ss.all) < 80 {
		t.Errorf("only %d scenarios, want at least 80", len(ss.all))
	}
	counts := map[string]int{}
	for _, b := range ss.all {
		counts[b.category]++
	}
	t.Logf("%d scenarios by category: %v", len(ss.all), counts)
	ss.finish()
}

func defineCommands(t *testing.T, ss *scenarioSet) {
	n := func(name, desc string) *sb { return newScenario(t, "command", name, desc, stdDeadlines) }
	ss.add(n("cmd_happy_single_output", "validate, prepare, admit one output, submit, consume, healthy: graph REUSABLE, retry PROHIBITED").
		succeeded("inv-1", 1).
		expect("session_state", "READY", "invocation_state", "TERMINAL", "graph_disposition", "REUSABLE",
			"primary_outcome", "SUCCEEDED", "retry_disposition", "PROHIBITED", "effect_state", "MAY_HAVE_STARTED",
			"outputs", "CONSUMED", "strategy_fallback_allowed", "false"))
	ss.add(n("cmd_happy_three_outputs", "three one-shot outputs consumed in turn; health check only after the last").
		succeeded("inv-1", 3).expect("outputs", "CONSUMED,CONSUMED,CONSUMED", "next_action_sequence", "9"))
	ss.add(n("cmd_graph_reuse_after_healthy", "rayflow decision 1 (docs/lifecycle.md#rayflows-decisions): admission on a REUSABLE graph is accepted and sets it PREPARED; a second invocation succeeds").
		succeeded("inv-1", 1).
		cmd(aReq).invID("inv-2").outs(2).want("ADMIT").
		expect("graph_disposition", "PREPARED", "primary_outcome", "<nil>", "outputs", "DECLARED,DECLARED", "retry_disposition", "AUTOMATIC_ALLOWED").
		cb(lifecycle.CallbackAdmitted).want("-").cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackSubmitted).want("-").
		cmd(cReq).inv().idx(1).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(1).want("-").
		cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(0).want("CHECK_HEALTH").
		cb(lifecycle.CallbackHealthy).want("-").expect("graph_disposition", "REUSABLE", "primary_outcome", "SUCCEEDED"))
	ss.add(n("cmd_graph_reuse_after_capacity_rejected", "CAPACITY_REJECTED leaves the graph PREPARED; a new invocation id is admitted").
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackCapacityRejected).want("-").
		cmd(aReq).invID("inv-2").outs(1).want("ADMIT").expect("primary_outcome", "<nil>"))
	ss.add(n("cmd_teardown_after_success", "TEARDOWN_REQUESTED on READY: teardown keeps consumed slots and the primary outcome").
		succeeded("inv-1", 1).cmd(tReq).want("TEARDOWN").expect("session_state", "DRAINING", "invocation_state", "TERMINAL", "graph_disposition", "REBUILD_REQUIRED").
		tornDown().expect("invocation_state", "TERMINAL", "outputs", "CONSUMED", "primary_outcome", "SUCCEEDED"))
	ss.add(n("cmd_drain_idle_session", "DRAIN_REQUESTED with no invocation: DRAIN_SESSION, then teardown; invocation stays NONE").
		ready().cmd(dReq).want("DRAIN_SESSION").cb(lifecycle.CallbackDrained).want("TEARDOWN").tornDown().expect("invocation_state", "NONE"))
	ss.add(n("cmd_drain_after_terminal", "DRAIN_REQUESTED after a finished invocation: graph DRAIN_REQUIRED, DRAIN_SESSION, then teardown").
		succeeded("inv-1", 1).cmd(dReq).want("DRAIN_SESSION").expect("graph_disposition", "DRAIN_REQUIRED").
		cb(lifecycle.CallbackDrained).want("TEARDOWN").tornDown())
	ss.add(n("cmd_drain_running_invocation", "DRAIN_REQUESTED while RUNNING drains the invocation: slots ADAPTER_RELEASED, health check, reusable").
		running("inv-1", 2).cmd(dReq).inv().want("DRAIN_INVOCATION").expect("invocation_state", "DRAINING", "session_state", "DRAINING").
		cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").expect("outputs", "ADAPTER_RELEASED,ADAPTER_RELEASED").
		cb(lifecycle.CallbackHealthy).want("-").expect("graph_disposition", "REUSABLE", "primary_outcome", "<nil>"))
	ss.add(n("cmd_drain_admitted_invocation", "DRAIN_REQUESTED before submission drains the admitted invocation").
		admitted("inv-1", 1).cmd(dReq).inv().want("DRAIN_INVOCATION").cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").
		cb(lifecycle.CallbackHealthy).want("-").expect("effect_state", "NOT_STARTED", "retry_disposition", "AUTOMATIC_ALLOWED"))
	ss.add(n("cmd_teardown_while_running", "TEARDOWN_REQUESTED while RUNNING: invocation DRAINING, confirmed teardown makes slots UNAVAILABLE_AFTER_TEARDOWN").
		running("inv-1", 2).cmd(tReq).want("TEARDOWN").expect("invocation_state", "DRAINING").
		tornDown().expect("outputs", "UNAVAILABLE_AFTER_TEARDOWN,UNAVAILABLE_AFTER_TEARDOWN", "invocation_state", "TERMINAL"))
	ss.add(n("cmd_teardown_from_new_invalid", "TEARDOWN_REQUESTED needs READY or QUARANTINED").
		cmd(tReq).want("INVALID_TRANSITION"))
	ss.add(n("cmd_consume_out_of_order", "outputs may be consumed in any order, each once").
		running("inv-1", 3).cmd(cReq).inv().idx(2).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(2).want("-").
		expect("outputs", "AVAILABLE,AVAILABLE,CONSUMED", "invocation_state", "RUNNING"))
	ss.add(n("cutoff_fallback_closed_at_preparation", "irreversible cutoff 1: issuing PREPARE closes strategy fallback; a failed preparation never reopens it").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").expect("strategy_fallback_allowed", "true").
		cmd(pReq).want("PREPARE").expect("strategy_fallback_allowed", "false", "session_state", "PREPARING").
		cb(lifecycle.CallbackPreparationFailed).want("TEARDOWN").expect("strategy_fallback_allowed", "false", "primary_outcome", "PREPARATION_FAILED").
		tornDown().expect("strategy_fallback_allowed", "false"))
	ss.add(n("cutoff_replay_closed_at_submission", "irreversible cutoff 2: issuing SUBMIT records MAY_HAVE_STARTED and APPLICATION_POLICY_REQUIRED even if the adapter then reports an application error").
		admitted("inv-1", 1).expect("retry_disposition", "AUTOMATIC_ALLOWED", "effect_state", "NOT_STARTED").
		cmd(sReq).inv().want("SUBMIT").expect("retry_disposition", "APPLICATION_POLICY_REQUIRED", "effect_state", "MAY_HAVE_STARTED").
		cb(lifecycle.CallbackApplicationError).want("DRAIN_INVOCATION").expect("retry_disposition", "APPLICATION_POLICY_REQUIRED", "effect_state", "MAY_HAVE_STARTED"))
	ss.add(n("cutoff_fallback_open_before_preparation", "validation alone keeps strategy fallback open; an outer deadline before preparation closes it").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").expect("strategy_fallback_allowed", "true").
		cmd(outerX).at(100).want("-").expect("strategy_fallback_allowed", "false", "session_state", "REJECTED"))
}

func defineCallbacks(t *testing.T, ss *scenarioSet) {
	n := func(name, desc string) *sb { return newScenario(t, "callback", name, desc, stdDeadlines) }
	ss.add(n("cb_validation_rejected", "VALIDATION_REJECTED: session REJECTED, primary VALIDATION_REJECTED; nothing else accepted").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidationRejected).want("-").
		expect("session_state", "REJECTED", "primary_outcome", "VALIDATION_REJECTED", "graph_disposition", "UNPREPARED").
		cmd(pReq).want("INVALID_TRANSITION").cmd(outerX).at(100).want("INVALID_TRANSITION"))
	ss.add(n("cb_preparation_failed", "PREPARATION_FAILED: primary set, graph REBUILD_REQUIRED, teardown").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").cmd(pReq).want("PREPARE").
		cb(lifecycle.CallbackPreparationFailed).want("TEARDOWN").expect("session_state", "DRAINING", "graph_disposition", "REBUILD_REQUIRED").
		tornDown().expect("invocation_state", "NONE", "primary_outcome", "PREPARATION_FAILED"))
	ss.add(n("cb_capacity_rejected", "CAPACITY_REJECTED: invocation TERMINAL, slots NOT_CREATED, retry AUTOMATIC_ALLOWED, session READY").
		ready().cmd(aReq).invID("inv-1").outs(2).want("ADMIT").cb(lifecycle.CallbackCapacityRejected).want("-").
		expect("session_state", "READY", "invocation_state", "TERMINAL", "outputs", "NOT_CREATED,NOT_CREATED",
			"retry_disposition", "AUTOMATIC_ALLOWED", "primary_outcome", "CAPACITY_REJECTED", "graph_disposition", "PREPARED"))
	ss.add(n("cb_application_error_on_submit", "APPLICATION_ERROR from SUBMIT: graph DRAIN_REQUIRED, drain, health check, reusable").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackApplicationError).want("DRAIN_INVOCATION").
		expect("graph_disposition", "DRAIN_REQUIRED", "primary_outcome", "APPLICATION_ERROR").
		cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").expect("outputs", "ADAPTER_RELEASED").
		cb(lifecycle.CallbackHealthy).want("-").expect("graph_disposition", "REUSABLE", "primary_outcome", "APPLICATION_ERROR"))
	ss.add(n("cb_application_error_on_consume", "APPLICATION_ERROR from CONSUME_OUTPUT spends the slot (CONSUMED); the rest are released by the drain").
		running("inv-1", 2).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackApplicationError).idx(0).want("DRAIN_INVOCATION").
		expect("outputs", "CONSUMED,AVAILABLE").cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").expect("outputs", "CONSUMED,ADAPTER_RELEASED").
		cb(lifecycle.CallbackUnhealthy).want("TEARDOWN").expect("cleanup_diagnostics", "HEALTH_CHECK_FAILED").tornDown())
	ss.add(n("cb_actor_died_on_submit", "ACTOR_DIED: primary ACTOR_DIED, graph REBUILD_REQUIRED, teardown, slots UNAVAILABLE_AFTER_TEARDOWN").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackActorDied).want("TEARDOWN").
		expect("primary_outcome", "ACTOR_DIED", "graph_disposition", "REBUILD_REQUIRED", "retry_disposition", "APPLICATION_POLICY_REQUIRED").
		tornDown().expect("outputs", "UNAVAILABLE_AFTER_TEARDOWN"))
	ss.add(n("cb_channel_error_on_consume", "CHANNEL_ERROR during consumption: teardown; the consuming slot is unavailable after teardown").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackChannelError).idx(0).want("TEARDOWN").
		expect("primary_outcome", "CHANNEL_ERROR", "outputs", "CONSUMING").tornDown().expect("outputs", "UNAVAILABLE_AFTER_TEARDOWN"))
	ss.add(n("cb_actor_died_on_consume", "ACTOR_DIED answering CONSUME_OUTPUT").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackActorDied).idx(0).want("TEARDOWN"))
	ss.add(n("cb_channel_error_on_submit", "CHANNEL_ERROR answering SUBMIT").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackChannelError).want("TEARDOWN").expect("primary_outcome", "CHANNEL_ERROR"))
	ss.add(n("cb_capacity_release_failed", "CAPACITY_RELEASE_FAILED after a pre-submission cancel: diagnostic, invocation TERMINAL, teardown").
		admitted("inv-1", 1).cmd(xReq).inv().want("RELEASE_CAPACITY").cb(lifecycle.CallbackCapacityReleaseFailed).want("TEARDOWN").
		expect("cleanup_diagnostics", "CAPACITY_RELEASE_FAILED", "invocation_state", "TERMINAL", "primary_outcome", "CANCELLED_PRE_SUBMISSION").
		tornDown().expect("outputs", "NOT_CREATED"))
	ss.add(n("cb_cancellation_failed", "CANCELLATION_FAILED: diagnostic, then drain as after CANCELLED").
		running("inv-1", 1).cmd(xReq).inv().want("CANCEL").cb(lifecycle.CallbackCancellationFailed).want("DRAIN_INVOCATION").
		expect("cleanup_diagnostics", "CANCELLATION_FAILED").cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").
		cb(lifecycle.CallbackHealthy).want("-").expect("graph_disposition", "REUSABLE", "primary_outcome", "CANCELLED_AFTER_SUBMISSION"))
	ss.add(n("cb_drain_failed_keeps_primary", "DRAIN_FAILED after an application error: diagnostic, teardown, the first primary outcome stands").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackApplicationError).want("DRAIN_INVOCATION").
		cb(lifecycle.CallbackDrainFailed).want("TEARDOWN").expect("primary_outcome", "APPLICATION_ERROR", "cleanup_diagnostics", "DRAIN_FAILED").tornDown())
	ss.add(n("cb_drain_failed_idle_session", "DRAIN_FAILED on an idle session drain: primary DRAIN_FAILURE").
		ready().cmd(dReq).want("DRAIN_SESSION").cb(lifecycle.CallbackDrainFailed).want("TEARDOWN").expect("primary_outcome", "DRAIN_FAILURE").tornDown())
	ss.add(n("cb_unhealthy", "UNHEALTHY after success: diagnostic HEALTH_CHECK_FAILED, teardown; primary stays SUCCEEDED").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).want("CHECK_HEALTH").
		cb(lifecycle.CallbackUnhealthy).want("TEARDOWN").expect("primary_outcome", "SUCCEEDED", "cleanup_diagnostics", "HEALTH_CHECK_FAILED").tornDown())
	ss.add(n("cb_teardown_failed_cleanup_unconfirmed", "TEARDOWN_FAILED while slots are still available: QUARANTINED, slots CLEANUP_UNCONFIRMED, primary TEARDOWN_FAILURE if unset").
		running("inv-1", 2).cmd(tReq).want("TEARDOWN").cb(lifecycle.CallbackTeardownFailed).want("-").
		expect("session_state", "QUARANTINED", "invocation_state", "TERMINAL", "outputs", "CLEANUP_UNCONFIRMED,CLEANUP_UNCONFIRMED",
			"primary_outcome", "TEARDOWN_FAILURE", "cleanup_diagnostics", "TEARDOWN_FAILED", "graph_disposition", "REBUILD_REQUIRED").
		cmd(tReq).want("TEARDOWN").tornDown().expect("outputs", "CLEANUP_UNCONFIRMED,CLEANUP_UNCONFIRMED"))
	ss.add(n("cb_teardown_failed_after_actor_died", "TEARDOWN_FAILED after ACTOR_DIED: primary stays ACTOR_DIED; released-unconfirmed slots").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackActorDied).idx(0).want("TEARDOWN").
		cb(lifecycle.CallbackTeardownFailed).want("-").expect("primary_outcome", "ACTOR_DIED", "outputs", "CLEANUP_UNCONFIRMED"))
	ss.add(n("cb_teardown_failed_no_invocation", "TEARDOWN_FAILED with no invocation: invocation stays NONE").
		ready().cmd(tReq).want("TEARDOWN").cb(lifecycle.CallbackTeardownFailed).want("-").expect("invocation_state", "NONE", "session_state", "QUARANTINED"))
	ss.add(n("cb_wrong_callback_kind", "a callback the pending action does not allow is INVALID_TRANSITION; the action stays pending").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackPrepared).want("INVALID_TRANSITION").cb(lifecycle.CallbackHealthy).want("INVALID_TRANSITION").
		cb(lifecycle.CallbackValidated).want("-"))
}

func defineExpiry(t *testing.T, ss *scenarioSet) {
	n := func(name, desc string) *sb { return newScenario(t, "expiry", name, desc, stdDeadlines) }
	ss.add(n("exp_validate_deadline_expired", "VALIDATE expires at the outer deadline: session REJECTED, primary OUTER_DEADLINE").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackDeadlineExpired).at(100).want("-").
		expect("session_state", "REJECTED", "primary_outcome", "OUTER_DEADLINE"))
	ss.add(n("exp_validate_late_success", "a VALIDATED observed at the deadline is processed as expiry").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).at(100).want("-").expect("session_state", "REJECTED"))
	ss.add(n("exp_prepare", "PREPARE expiry: primary OUTER_DEADLINE, graph REBUILD_REQUIRED, teardown at once expired too").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").cmd(pReq).want("PREPARE").
		cb(lifecycle.CallbackDeadlineExpired).at(100).want("-").
		expect("session_state", "QUARANTINED", "primary_outcome", "OUTER_DEADLINE", "cleanup_diagnostics", "TEARDOWN_TIMEOUT"))
	ss.add(n("exp_admit_timed_out", "ADMISSION_TIMED_OUT at the admission deadline: ADMISSION_TIMEOUT, RELEASE_CAPACITY, graph PREPARED").
		ready().cmd(aReq).invID("inv-1").outs(2).want("ADMIT").cb(lifecycle.CallbackAdmissionTimedOut).at(10).want("RELEASE_CAPACITY").
		expect("primary_outcome", "ADMISSION_TIMEOUT", "invocation_state", "CANCELLING", "outputs", "NOT_CREATED,NOT_CREATED", "retry_disposition", "AUTOMATIC_ALLOWED").
		cb(lifecycle.CallbackCapacityReleased).want("-").expect("session_state", "READY", "invocation_state", "TERMINAL", "graph_disposition", "PREPARED"))
	ss.add(n("exp_admit_late_success", "ADMITTED observed after the admission deadline is expiry, not admission").
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackAdmitted).at(12).want("RELEASE_CAPACITY").
		expect("primary_outcome", "ADMISSION_TIMEOUT"))
	ss.add(n("exp_admit_early_timeout", "ADMISSION_TIMED_OUT before the admission deadline is DEADLINE_NOT_EXPIRED").
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackAdmissionTimedOut).at(9.5).want("DEADLINE_NOT_EXPIRED").
		cb(lifecycle.CallbackAdmitted).want("-"))
	ss.add(n("exp_submit_timed_out", "SUBMISSION_TIMED_OUT: SUBMIT_TIMEOUT, graph DRAIN_REQUIRED, drain; never replay").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackSubmissionTimedOut).at(20).want("DRAIN_INVOCATION").
		expect("primary_outcome", "SUBMIT_TIMEOUT", "graph_disposition", "DRAIN_REQUIRED", "retry_disposition", "APPLICATION_POLICY_REQUIRED", "effect_state", "MAY_HAVE_STARTED").
		cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").cb(lifecycle.CallbackHealthy).want("-").expect("graph_disposition", "REUSABLE"))
	ss.add(n("exp_submit_early_timeout", "SUBMISSION_TIMED_OUT before the submission deadline is DEADLINE_NOT_EXPIRED").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackSubmissionTimedOut).at(19.999).want("DEADLINE_NOT_EXPIRED"))
	ss.add(n("exp_consume_result_timed_out", "RESULT_TIMED_OUT: GET_TIMEOUT, slot RELEASE_PENDING, graph REBUILD_REQUIRED; after the drain, teardown").
		running("inv-1", 2).cmd(cReq).inv().idx(1).want("CONSUME_OUTPUT").cb(lifecycle.CallbackResultTimedOut).idx(1).at(30).want("DRAIN_INVOCATION").
		expect("primary_outcome", "GET_TIMEOUT", "outputs", "AVAILABLE,RELEASE_PENDING", "graph_disposition", "REBUILD_REQUIRED").
		cb(lifecycle.CallbackDrained).want("TEARDOWN").expect("outputs", "ADAPTER_RELEASED,ADAPTER_RELEASED").tornDown())
	ss.add(n("exp_consume_early_timeout", "RESULT_TIMED_OUT before the result deadline is DEADLINE_NOT_EXPIRED").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackResultTimedOut).idx(0).at(29).want("DEADLINE_NOT_EXPIRED"))
	ss.add(n("exp_release_capacity", "RELEASE_CAPACITY expiry: CAPACITY_RELEASE_TIMEOUT, invocation TERMINAL, teardown").
		admitted("inv-1", 1).cmd(xReq).inv().want("RELEASE_CAPACITY").cb(lifecycle.CallbackDeadlineExpired).at(40).want("TEARDOWN").
		expect("cleanup_diagnostics", "CAPACITY_RELEASE_TIMEOUT", "invocation_state", "TERMINAL", "graph_disposition", "REBUILD_REQUIRED").tornDown())
	ss.add(n("exp_cancel", "CANCEL expiry: CANCELLATION_TIMEOUT, drain").
		running("inv-1", 1).cmd(xReq).inv().want("CANCEL").cb(lifecycle.CallbackCancelled).at(40).want("DRAIN_INVOCATION").
		expect("cleanup_diagnostics", "CANCELLATION_TIMEOUT").cb(lifecycle.CallbackDrained).at(41).want("CHECK_HEALTH"))
	ss.add(n("exp_drain_invocation", "DRAIN_INVOCATION expiry: DRAIN_TIMEOUT diagnostic; the first primary outcome stands").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackApplicationError).want("DRAIN_INVOCATION").
		cb(lifecycle.CallbackDeadlineExpired).at(50).want("TEARDOWN").expect("cleanup_diagnostics", "DRAIN_TIMEOUT", "primary_outcome", "APPLICATION_ERROR").tornDown())
	ss.add(n("exp_drain_invocation_sets_primary", "DRAIN_INVOCATION expiry with no primary outcome: DRAIN_TIMEOUT becomes primary").
		running("inv-1", 1).cmd(dReq).inv().want("DRAIN_INVOCATION").cb(lifecycle.CallbackDrained).at(50).want("TEARDOWN").
		expect("primary_outcome", "DRAIN_TIMEOUT", "outputs", "AVAILABLE").tornDown().expect("outputs", "UNAVAILABLE_AFTER_TEARDOWN"))
	ss.add(n("exp_drain_session", "DRAIN_SESSION expiry: DRAIN_TIMEOUT, teardown").
		ready().cmd(dReq).want("DRAIN_SESSION").cb(lifecycle.CallbackDeadlineExpired).at(50).want("TEARDOWN").expect("primary_outcome", "DRAIN_TIMEOUT").tornDown())
	ss.add(n("exp_check_health", "CHECK_HEALTH expiry: HEALTH_CHECK_FAILED, graph REBUILD_REQUIRED, teardown").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).want("CHECK_HEALTH").
		cb(lifecycle.CallbackHealthy).at(50).want("TEARDOWN").expect("cleanup_diagnostics", "HEALTH_CHECK_FAILED", "primary_outcome", "SUCCEEDED").tornDown())
	ss.add(n("exp_teardown", "TEARDOWN expiry before the outer deadline: TEARDOWN_TIMEOUT, primary TEARDOWN_FAILURE, slots CLEANUP_UNCONFIRMED").
		running("inv-1", 1).cmd(tReq).want("TEARDOWN").cb(lifecycle.CallbackTornDown).at(60).want("-").
		expect("session_state", "QUARANTINED", "primary_outcome", "TEARDOWN_FAILURE", "cleanup_diagnostics", "TEARDOWN_TIMEOUT", "outputs", "CLEANUP_UNCONFIRMED"))
	ss.add(n("exp_issue_after_deadline", "an action issued at or after its deadline expires at once: SUBMIT requested at the submission deadline drains").
		admitted("inv-1", 1).cmd(sReq).inv().at(20).want("DRAIN_INVOCATION").
		expect("primary_outcome", "SUBMIT_TIMEOUT", "effect_state", "MAY_HAVE_STARTED"))
	ss.add(n("exp_issue_chain_to_quarantine", "CONSUMPTION_REQUESTED after the drain deadline: consume, drain and teardown all expire in one event").
		running("inv-1", 1).cmd(cReq).inv().idx(0).at(60).want("-").
		expect("session_state", "QUARANTINED", "primary_outcome", "GET_TIMEOUT", "cleanup_diagnostics", "DRAIN_TIMEOUT,TEARDOWN_TIMEOUT", "outputs", "CLEANUP_UNCONFIRMED", "next_action_sequence", "8"))
	ss.add(n("exp_callback_just_before_deadline", "a success observed just before its deadline is a success").
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackAdmitted).at(9.999999).want("-").expect("invocation_state", "ADMITTED"))
	ss.add(n("exp_deadline_expired_early", "DEADLINE_EXPIRED before the action deadline is DEADLINE_NOT_EXPIRED").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackDeadlineExpired).at(99).want("DEADLINE_NOT_EXPIRED"))

	// Deadline ties and precedence: the outer deadline wins ties.
	tie := func(name, desc string, f func(*reducer.Deadlines)) *sb {
		return newScenario(t, "deadline-tie", name, desc, with(stdDeadlines, f))
	}
	ss.add(tie("tie_admission_equals_outer", "admission deadline equal to outer: ADMIT expiry is OUTER_DEADLINE, not ADMISSION_TIMEOUT",
		func(d *reducer.Deadlines) { d.Outer, d.Admission = 10, 10 }).
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackAdmissionTimedOut).at(10).want("-").
		expect("primary_outcome", "OUTER_DEADLINE", "session_state", "QUARANTINED"))
	ss.add(tie("tie_submission_after_outer", "a stage deadline beyond outer is capped by it: SUBMIT's deadline is outer, expiry OUTER_DEADLINE",
		func(d *reducer.Deadlines) { d.Outer, d.Submission = 15, 500 }).
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").check(func(s reducer.State) string {
		if s.Pending().Deadline != 15 {
			return "SUBMIT deadline not capped by outer"
		}
		return ""
	}).cb(lifecycle.CallbackSubmitted).at(15).want("-").expect("primary_outcome", "OUTER_DEADLINE"))
	ss.add(tie("tie_result_equals_outer", "result deadline equal to outer: GET expiry is OUTER_DEADLINE",
		func(d *reducer.Deadlines) { d.Outer, d.Result = 30, 30 }).
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackResultTimedOut).idx(0).at(30).want("-").
		expect("primary_outcome", "OUTER_DEADLINE"))
	ss.add(tie("tie_result_just_before_outer", "result deadline one unit before outer: GET_TIMEOUT",
		func(d *reducer.Deadlines) { d.Outer, d.Result = 31, 30 }).
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackResultTimedOut).idx(0).at(30).want("DRAIN_INVOCATION").
		expect("primary_outcome", "GET_TIMEOUT"))
	ss.add(tie("tie_drain_equals_outer", "drain deadline equal to outer: DRAIN_SESSION expiry primary OUTER_DEADLINE",
		func(d *reducer.Deadlines) { d.Outer, d.Drain, d.Teardown = 50, 50, 50 }).
		ready().cmd(dReq).want("DRAIN_SESSION").cb(lifecycle.CallbackDeadlineExpired).at(50).want("-").
		expect("primary_outcome", "OUTER_DEADLINE", "cleanup_diagnostics", "DRAIN_TIMEOUT,TEARDOWN_TIMEOUT"))
	ss.add(tie("tie_teardown_equals_outer", "teardown deadline equal to outer: TEARDOWN expiry is OUTER_DEADLINE with TEARDOWN_TIMEOUT",
		func(d *reducer.Deadlines) { d.Outer, d.Teardown = 60, 60 }).
		ready().cmd(tReq).want("TEARDOWN").cb(lifecycle.CallbackTeardownFailed).at(60).want("-").
		expect("primary_outcome", "OUTER_DEADLINE", "cleanup_diagnostics", "TEARDOWN_TIMEOUT"))
	ss.add(tie("tie_cancellation_equals_outer", "cancellation deadline equal to outer: CANCEL expiry is a CANCELLATION_TIMEOUT and the drain inherits the expired outer",
		func(d *reducer.Deadlines) { d.Outer, d.Cancellation = 40, 40 }).
		running("inv-1", 1).cmd(xReq).inv().want("CANCEL").cb(lifecycle.CallbackDeadlineExpired).at(40).want("-").
		expect("cleanup_diagnostics", "CANCELLATION_TIMEOUT,DRAIN_TIMEOUT,TEARDOWN_TIMEOUT", "primary_outcome", "CANCELLED_AFTER_SUBMISSION"))
	ss.add(tie("tie_all_deadlines_equal", "all seven deadlines equal: every expiry is OUTER_DEADLINE",
		func(d *reducer.Deadlines) {
			*d = reducer.Deadlines{Outer: 5, Admission: 5, Submission: 5, Result: 5, Cancellation: 5, Drain: 5, Teardown: 5}
		}).
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackDeadlineExpired).at(5).want("-").
		expect("primary_outcome", "OUTER_DEADLINE", "session_state", "QUARANTINED", "retry_disposition", "AUTOMATIC_ALLOWED"))
	ss.add(tie("tie_zero_deadlines", "deadlines of zero: the first action expires as it is issued",
		func(d *reducer.Deadlines) { *d = reducer.Deadlines{} }).
		cmd(vReq).at(0).want("-").expect("session_state", "REJECTED", "primary_outcome", "OUTER_DEADLINE", "next_action_sequence", "2"))
}

func defineOuter(t *testing.T, ss *scenarioSet) {
	n := func(name, desc string) *sb { return newScenario(t, "outer-deadline", name, desc, stdDeadlines) }
	ss.add(n("outer_in_new", "OUTER_DEADLINE_EXPIRED in NEW: REJECTED, fallback closed, retry PROHIBITED").
		cmd(outerX).at(100).want("-").expect("session_state", "REJECTED", "strategy_fallback_allowed", "false", "retry_disposition", "PROHIBITED", "primary_outcome", "OUTER_DEADLINE"))
	ss.add(n("outer_not_expired", "OUTER_DEADLINE_EXPIRED before the outer deadline is DEADLINE_NOT_EXPIRED").
		cmd(outerX).at(99.5).want("DEADLINE_NOT_EXPIRED"))
	ss.add(n("outer_in_validated", "OUTER_DEADLINE_EXPIRED in VALIDATED: REJECTED").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").cmd(outerX).at(100).want("-").expect("session_state", "REJECTED"))
	ss.add(n("outer_with_pending_validate", "OUTER_DEADLINE_EXPIRED with VALIDATE pending expires it; its late callback is a duplicate").
		cmd(vReq).want("VALIDATE").cmd(outerX).at(100).want("-").expect("session_state", "REJECTED").
		cb(lifecycle.CallbackValidated).want("DUPLICATE_ACTION"))
	ss.add(n("outer_in_ready_idle", "OUTER_DEADLINE_EXPIRED in READY with no invocation: QUARANTINED, REBUILD_REQUIRED; a later teardown expires as it is issued").
		ready().cmd(outerX).at(100).want("-").expect("session_state", "QUARANTINED", "graph_disposition", "REBUILD_REQUIRED", "primary_outcome", "OUTER_DEADLINE").
		cmd(tReq).want("-").expect("session_state", "QUARANTINED", "cleanup_diagnostics", "TEARDOWN_TIMEOUT"))
	ss.add(n("outer_in_admitted", "OUTER_DEADLINE_EXPIRED while ADMITTED: release capacity (expired at once), then teardown (expired): QUARANTINED").
		admitted("inv-1", 1).cmd(outerX).inv().at(100).want("-").
		expect("primary_outcome", "OUTER_DEADLINE", "retry_disposition", "PROHIBITED", "outputs", "NOT_CREATED", "session_state", "QUARANTINED",
			"cleanup_diagnostics", "CAPACITY_RELEASE_TIMEOUT,TEARDOWN_TIMEOUT"))
	ss.add(n("outer_in_running", "OUTER_DEADLINE_EXPIRED while RUNNING: drain and teardown expire at once, slots CLEANUP_UNCONFIRMED").
		running("inv-1", 2).cmd(outerX).inv().at(100).want("-").
		expect("primary_outcome", "OUTER_DEADLINE", "retry_disposition", "APPLICATION_POLICY_REQUIRED", "outputs", "CLEANUP_UNCONFIRMED,CLEANUP_UNCONFIRMED"))
	ss.add(n("outer_running_missing_invocation", "OUTER_DEADLINE_EXPIRED while an invocation is active must carry its identity").
		running("inv-1", 1).cmd(outerX).at(100).want("MISSING_INVOCATION_IDENTITY"))
	ss.add(n("outer_in_terminal", "OUTER_DEADLINE_EXPIRED after a finished invocation: QUARANTINED, retry PROHIBITED, primary kept").
		succeeded("inv-1", 1).cmd(outerX).at(100).want("-").
		expect("session_state", "QUARANTINED", "retry_disposition", "PROHIBITED", "primary_outcome", "SUCCEEDED", "graph_disposition", "REBUILD_REQUIRED"))
	ss.add(n("outer_in_torn_down", "OUTER_DEADLINE_EXPIRED after teardown is INVALID_TRANSITION").
		ready().cmd(tReq).want("TEARDOWN").tornDown().cmd(outerX).at(100).want("INVALID_TRANSITION"))
	ss.add(n("outer_with_pending_teardown", "OUTER_DEADLINE_EXPIRED with TEARDOWN pending expires it").
		ready().cmd(tReq).want("TEARDOWN").cmd(outerX).at(100).want("-").expect("session_state", "QUARANTINED", "cleanup_diagnostics", "TEARDOWN_TIMEOUT"))
	ss.add(n("outer_cancellation_at_outer", "CANCELLATION_REQUESTED at the outer deadline takes the outer-deadline path").
		running("inv-1", 1).cmd(xReq).inv().at(100).want("-").expect("primary_outcome", "OUTER_DEADLINE", "session_state", "QUARANTINED"))
	ss.add(n("outer_owner_lost_at_outer", "OWNER_LOST at the outer deadline takes the outer-deadline path (no OWNER_LOST outcome)").
		admitted("inv-1", 1).cmd(oLost).inv().at(100).want("-").expect("primary_outcome", "OUTER_DEADLINE", "retry_disposition", "PROHIBITED"))
	ss.add(n("outer_token_forbidden", "OUTER_DEADLINE_EXPIRED is a command: an action token is UNEXPECTED_ACTION_TOKEN").
		cmd(vReq).want("VALIDATE").cmd(outerX).at(100).tok(reducer.Token(1, lifecycle.ActionValidate)).want("UNEXPECTED_ACTION_TOKEN"))
}

func defineCancellation(t *testing.T, ss *scenarioSet) {
	n := func(name, desc string) *sb { return newScenario(t, "cancellation", name, desc, stdDeadlines) }
	ss.add(n("cancel_pre_submission_admitting", "cancel while ADMIT is pending: it is superseded (its callback is stale), capacity released, retry PROHIBITED").
		ready().cmd(aReq).invID("inv-1").outs(2).want("ADMIT").cmd(xReq).inv().want("RELEASE_CAPACITY").
		expect("primary_outcome", "CANCELLED_PRE_SUBMISSION", "retry_disposition", "PROHIBITED", "outputs", "NOT_CREATED,NOT_CREATED", "effect_state", "NOT_STARTED").
		stray(lifecycle.CallbackAdmitted).inv().tok(reducer.Token(3, lifecycle.ActionAdmit)).want("STALE_ACTION_TOKEN").
		cb(lifecycle.CallbackCapacityReleased).want("-").expect("session_state", "READY", "invocation_state", "TERMINAL"))
	ss.add(n("cancel_pre_submission_admitted", "cancel while ADMITTED: CANCELLED_PRE_SUBMISSION, RELEASE_CAPACITY; the graph stays usable").
		admitted("inv-1", 1).cmd(xReq).inv().want("RELEASE_CAPACITY").cb(lifecycle.CallbackCapacityReleased).want("-").
		expect("graph_disposition", "PREPARED", "primary_outcome", "CANCELLED_PRE_SUBMISSION").
		cmd(aReq).invID("inv-2").outs(1).want("ADMIT"))
	ss.add(n("cancel_after_submission_submitting", "cancel while SUBMIT is pending: CANCELLED_AFTER_SUBMISSION, CANCEL; a late SUBMITTED is stale").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cmd(xReq).inv().want("CANCEL").
		expect("primary_outcome", "CANCELLED_AFTER_SUBMISSION", "session_state", "DRAINING", "graph_disposition", "DRAIN_REQUIRED", "retry_disposition", "APPLICATION_POLICY_REQUIRED").
		stray(lifecycle.CallbackSubmitted).inv().tok(reducer.Token(4, lifecycle.ActionSubmit)).want("STALE_ACTION_TOKEN").
		cb(lifecycle.CallbackCancelled).want("DRAIN_INVOCATION").cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").cb(lifecycle.CallbackHealthy).want("-").
		expect("graph_disposition", "REUSABLE", "outputs", "ADAPTER_RELEASED"))
	ss.add(n("cancel_after_submission_running", "cancel while RUNNING").
		running("inv-1", 2).cmd(xReq).inv().want("CANCEL").cb(lifecycle.CallbackCancelled).want("DRAIN_INVOCATION").
		cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").expect("outputs", "ADAPTER_RELEASED,ADAPTER_RELEASED"))
	ss.add(n("cancel_after_submission_consuming", "cancel during consumption: the consuming slot is released by the drain").
		running("inv-1", 2).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cmd(xReq).inv().want("CANCEL").expect("outputs", "CONSUMING,AVAILABLE").
		cb(lifecycle.CallbackCancelled).want("DRAIN_INVOCATION").cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").expect("outputs", "ADAPTER_RELEASED,ADAPTER_RELEASED"))
	ss.add(n("cancel_idle_invalid", "cancel with no invocation is INVALID_TRANSITION (it still needs an invocation identity)").
		ready().cmd(xReq).invID("inv-1").want("INVALID_TRANSITION").cmd(xReq).want("MISSING_INVOCATION_IDENTITY"))
	ss.add(n("cancel_twice_invalid", "a second cancel while CANCELLING is INVALID_TRANSITION").
		running("inv-1", 1).cmd(xReq).inv().want("CANCEL").cmd(xReq).inv().want("INVALID_TRANSITION"))
	ss.add(n("cancel_after_terminal_invalid", "cancel after a finished invocation is INVALID_TRANSITION").
		succeeded("inv-1", 1).cmd(xReq).inv().want("INVALID_TRANSITION"))
}

func defineOwnerLoss(t *testing.T, ss *scenarioSet) {
	n := func(name, desc string) *sb { return newScenario(t, "owner-loss", name, desc, stdDeadlines) }
	ss.add(n("owner_lost_pre_submission_admitting", "owner loss before the submission cutoff: NOT_STARTED, NOT_CREATED, AUTOMATIC_ALLOWED, QUARANTINED").
		ready().cmd(aReq).invID("inv-1").outs(2).want("ADMIT").cmd(oLost).inv().want("-").
		expect("session_state", "QUARANTINED", "invocation_state", "TERMINAL", "effect_state", "NOT_STARTED", "outputs", "NOT_CREATED,NOT_CREATED",
			"retry_disposition", "AUTOMATIC_ALLOWED", "primary_outcome", "OWNER_LOST", "graph_disposition", "REBUILD_REQUIRED", "pending_action", "<nil>").
		stray(lifecycle.CallbackAdmitted).inv().tok(reducer.Token(3, lifecycle.ActionAdmit)).want("STALE_ACTION_TOKEN"))
	ss.add(n("owner_lost_pre_submission_admitted", "owner loss while ADMITTED").
		admitted("inv-1", 1).cmd(oLost).inv().want("-").expect("retry_disposition", "AUTOMATIC_ALLOWED", "outputs", "NOT_CREATED"))
	ss.add(n("owner_lost_post_submission_submitting", "owner loss after the submission cutoff: MAY_HAVE_STARTED, LOST_WITH_OWNER, OPERATOR_RECONCILIATION_REQUIRED").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cmd(oLost).inv().want("-").
		expect("effect_state", "MAY_HAVE_STARTED", "outputs", "LOST_WITH_OWNER", "retry_disposition", "OPERATOR_RECONCILIATION_REQUIRED", "primary_outcome", "OWNER_LOST"))
	ss.add(n("owner_lost_post_submission_partial", "owner loss after one of two outputs was consumed: the consumed slot keeps its state").
		running("inv-1", 2).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(0).want("-").
		cmd(oLost).inv().want("-").expect("outputs", "CONSUMED,LOST_WITH_OWNER"))
	ss.add(n("owner_lost_during_consume", "owner loss with CONSUME_OUTPUT pending: commands carry no output index (rayflow decision 3, docs/lifecycle.md#rayflows-decisions)").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cmd(oLost).inv().want("-").expect("outputs", "LOST_WITH_OWNER"))
	ss.add(n("owner_lost_during_release_capacity", "rayflow decision 2 (docs/lifecycle.md#rayflows-decisions): owner loss during a pre-submission cancel keeps CANCELLED_PRE_SUBMISSION and PROHIBITED").
		admitted("inv-1", 1).cmd(xReq).inv().want("RELEASE_CAPACITY").cmd(oLost).inv().want("-").
		expect("primary_outcome", "CANCELLED_PRE_SUBMISSION", "retry_disposition", "PROHIBITED", "outputs", "NOT_CREATED", "session_state", "QUARANTINED"))
	ss.add(n("owner_lost_during_admit_expiry_release", "owner loss while releasing capacity after ADMISSION_TIMEOUT: AUTOMATIC_ALLOWED stays").
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackAdmissionTimedOut).at(10).want("RELEASE_CAPACITY").
		cmd(oLost).inv().want("-").expect("primary_outcome", "ADMISSION_TIMEOUT", "retry_disposition", "AUTOMATIC_ALLOWED"))
	ss.add(n("owner_lost_during_cancel", "rayflow decision 2 (docs/lifecycle.md#rayflows-decisions): owner loss with CANCEL pending: post-submission branch, first primary stands").
		running("inv-1", 1).cmd(xReq).inv().want("CANCEL").cmd(oLost).inv().want("-").
		expect("primary_outcome", "CANCELLED_AFTER_SUBMISSION", "retry_disposition", "OPERATOR_RECONCILIATION_REQUIRED", "outputs", "LOST_WITH_OWNER"))
	ss.add(n("owner_lost_during_drain", "owner loss with DRAIN_INVOCATION pending").
		admitted("inv-1", 1).cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackApplicationError).want("DRAIN_INVOCATION").
		cmd(oLost).inv().want("-").expect("primary_outcome", "APPLICATION_ERROR", "retry_disposition", "OPERATOR_RECONCILIATION_REQUIRED"))
	ss.add(n("owner_lost_during_check_health", "owner loss during the health check after success: slots stay CONSUMED").
		running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).want("CHECK_HEALTH").
		cmd(oLost).inv().want("-").expect("outputs", "CONSUMED", "primary_outcome", "SUCCEEDED", "retry_disposition", "OPERATOR_RECONCILIATION_REQUIRED"))
	ss.add(n("owner_lost_reconciliation_sticky", "rayflow decision 4 (docs/lifecycle.md#rayflows-decisions): the outer deadline after owner loss keeps OPERATOR_RECONCILIATION_REQUIRED").
		running("inv-1", 1).cmd(oLost).inv().want("-").cmd(outerX).at(100).want("-").
		expect("retry_disposition", "OPERATOR_RECONCILIATION_REQUIRED", "session_state", "QUARANTINED"))
	ss.add(n("owner_lost_then_teardown", "teardown after owner loss is confirmed: LOST_WITH_OWNER slots stay, graph TORN_DOWN").
		running("inv-1", 2).cmd(oLost).inv().want("-").cmd(tReq).want("TEARDOWN").tornDown().
		expect("outputs", "LOST_WITH_OWNER,LOST_WITH_OWNER", "retry_disposition", "OPERATOR_RECONCILIATION_REQUIRED"))
	ss.add(n("owner_lost_without_invocation", "OWNER_LOST needs an active invocation").
		ready().cmd(oLost).invID("inv-1").want("INVALID_TRANSITION"))
	ss.add(n("owner_lost_after_terminal", "OWNER_LOST after the invocation finished is INVALID_TRANSITION").
		succeeded("inv-1", 1).cmd(oLost).inv().want("INVALID_TRANSITION"))
	ss.add(n("owner_lost_during_teardown", "OWNER_LOST while TEARDOWN (a session action) is pending: an invocation identity is refused as INVALID_EVENT").
		running("inv-1", 1).cmd(tReq).want("TEARDOWN").cmd(oLost).inv().want("INVALID_EVENT").cmd(oLost).want("MISSING_INVOCATION_IDENTITY"))
}

func defineRejections(t *testing.T, ss *scenarioSet) {
	n := func(name, desc string) *sb { return newScenario(t, "rejection", name, desc, stdDeadlines) }
	ss.add(n("rej_invalid_event_kind", "an unknown event kind is INVALID_EVENT").
		cmd(lifecycle.Command("LAUNCH_REQUESTED")).want("INVALID_EVENT").cmd(vReq).want("VALIDATE"))
	ss.add(n("rej_invalid_event_protocol", "protocol_version other than 1, or missing, is INVALID_EVENT").
		cmd(vReq).mod(func(e *reducer.Event) { e.ProtocolVersion = 2 }).want("INVALID_EVENT").
		cmd(vReq).rawEdit(func(m map[string]any) { delete(m, "protocol_version") }).want("INVALID_EVENT"))
	ss.add(n("rej_invalid_event_unknown_field", "an event with an unknown field is INVALID_EVENT").
		cmd(vReq).rawEdit(func(m map[string]any) { m["payload"] = "secret" }).want("INVALID_EVENT"))
	ss.add(n("rej_invalid_event_session_command_with_invocation", "session commands must not carry an invocation identity").
		cmd(vReq).invID("inv-1").want("INVALID_EVENT").cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).invID("inv-1").want("INVALID_EVENT"))
	ss.add(n("rej_invalid_identity", "an invalid run identity (pk 0, empty run_id, 129-character run_id, negative generation) is INVALID_IDENTITY").
		cmd(vReq).mod(func(e *reducer.Event) { e.Session.TaskExecutionPK = 0 }).want("INVALID_IDENTITY").
		cmd(vReq).mod(func(e *reducer.Event) { e.Session.RunID = "" }).want("INVALID_IDENTITY").
		cmd(vReq).mod(func(e *reducer.Event) { e.Session.RunID = string(make([]byte, 129)) }).want("INVALID_IDENTITY").
		cmd(vReq).mod(func(e *reducer.Event) { e.Session.ExecutionGeneration = -1 }).want("INVALID_IDENTITY").
		cmd(vReq).rawEdit(func(m map[string]any) { delete(m, "session_identity") }).want("INVALID_IDENTITY"))
	ss.add(n("rej_invalid_invocation_identity", "an invalid invocation identity is INVALID_IDENTITY").
		ready().cmd(aReq).invID("").outs(1).want("INVALID_IDENTITY"))
	ss.add(n("rej_stale_session_identity", "another attempt's or generation's identity is STALE_SESSION_IDENTITY").
		cmd(vReq).mod(func(e *reducer.Event) { e.Session.AttemptNumber = 2 }).want("STALE_SESSION_IDENTITY").
		cmd(vReq).mod(func(e *reducer.Event) { e.Session.ExecutionGeneration = 1 }).want("STALE_SESSION_IDENTITY").
		ready().cmd(aReq).outs(1).mod(func(e *reducer.Event) {
		other := runID
		other.RunID = "rayflow:43"
		inv := other.Invocation("inv-1")
		e.Invocation = &inv
	}).want("STALE_SESSION_IDENTITY"))
	ss.add(n("rej_missing_invocation_identity", "invocation commands and callbacks to invocation actions need the five-field identity").
		ready().cmd(aReq).outs(1).want("MISSING_INVOCATION_IDENTITY").cmd(aReq).invID("inv-1").outs(1).want("ADMIT").
		cb(lifecycle.CallbackAdmitted).noInv().want("MISSING_INVOCATION_IDENTITY").cb(lifecycle.CallbackAdmitted).want("-").
		cmd(sReq).want("MISSING_INVOCATION_IDENTITY"))
	ss.add(n("rej_stale_invocation_identity", "another invocation's identity is STALE_INVOCATION_IDENTITY").
		ready().cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackAdmitted).invID("inv-0").want("STALE_INVOCATION_IDENTITY").
		cb(lifecycle.CallbackAdmitted).want("-").cmd(sReq).invID("inv-0").want("STALE_INVOCATION_IDENTITY"))
	ss.add(n("rej_duplicate_invocation", "re-admitting the current invocation id is DUPLICATE_INVOCATION").
		succeeded("inv-1", 1).cmd(aReq).invID("inv-1").outs(1).want("DUPLICATE_INVOCATION").cmd(aReq).invID("inv-2").outs(1).want("ADMIT"))
	ss.add(n("rej_invalid_clock", "observed_at negative or missing is INVALID_CLOCK").
		cmd(vReq).at(-1).want("INVALID_CLOCK").
		cmd(vReq).rawEdit(func(m map[string]any) { delete(m, "observed_at") }).want("INVALID_CLOCK").
		cmd(vReq).rawEdit(func(m map[string]any) { m["observed_at"] = "soon" }).want("INVALID_CLOCK").
		cmd(vReq).at(0).want("VALIDATE"))
	ss.add(n("rej_clock_regression", "observed_at below the last accepted one is CLOCK_REGRESSION; equal is fine").
		at(5).cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).at(4).want("CLOCK_REGRESSION").cb(lifecycle.CallbackValidated).at(5).want("-"))
	ss.add(n("rej_invalid_transition", "commands outside their precondition are INVALID_TRANSITION").
		cmd(pReq).want("INVALID_TRANSITION").cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").
		cmd(vReq).want("INVALID_TRANSITION").cmd(dReq).want("INVALID_TRANSITION").
		cmd(pReq).want("PREPARE").cb(lifecycle.CallbackPrepared).want("-").cmd(sReq).invID("inv-1").want("INVALID_TRANSITION").
		cmd(cReq).invID("inv-1").idx(0).want("INVALID_TRANSITION"))
	ss.add(n("rej_action_in_progress", "a command other than cancel, owner loss or outer deadline while an action is pending is ACTION_IN_PROGRESS").
		cmd(vReq).want("VALIDATE").cmd(pReq).want("ACTION_IN_PROGRESS").cmd(tReq).want("ACTION_IN_PROGRESS").
		cb(lifecycle.CallbackValidated).want("-").cmd(pReq).want("PREPARE").cb(lifecycle.CallbackPrepared).want("-").
		cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cmd(sReq).inv().want("ACTION_IN_PROGRESS"))
	ss.add(n("rej_action_token_required", "a callback without a token is ACTION_TOKEN_REQUIRED, with or without a pending action").
		stray(lifecycle.CallbackValidated).want("ACTION_TOKEN_REQUIRED").cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).tok("").want("ACTION_TOKEN_REQUIRED"))
	ss.add(n("rej_unexpected_action_token", "a command with a token is UNEXPECTED_ACTION_TOKEN").
		cmd(vReq).tok(reducer.Token(1, lifecycle.ActionValidate)).want("UNEXPECTED_ACTION_TOKEN"))
	ss.add(n("rej_stale_action_token", "a token that is not pending and not the last completed is STALE_ACTION_TOKEN").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).tok(reducer.Token(2, lifecycle.ActionValidate)).want("STALE_ACTION_TOKEN").
		cb(lifecycle.CallbackValidated).tok("cg-lifecycle-v1:01:VALIDATE").want("STALE_ACTION_TOKEN").
		cb(lifecycle.CallbackValidated).want("-").cmd(pReq).want("PREPARE").cb(lifecycle.CallbackPrepared).want("-").
		stray(lifecycle.CallbackValidated).tok(reducer.Token(1, lifecycle.ActionValidate)).want("STALE_ACTION_TOKEN").
		stray(lifecycle.CallbackValidated).tok(reducer.Token(99, lifecycle.ActionValidate)).want("STALE_ACTION_TOKEN"))
	ss.add(n("rej_duplicate_action", "re-delivering the last completed callback is DUPLICATE_ACTION, with or without a pending action").
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").cb(lifecycle.CallbackValidated).want("DUPLICATE_ACTION").
		cmd(pReq).want("PREPARE").stray(lifecycle.CallbackValidated).tok(reducer.Token(1, lifecycle.ActionValidate)).want("DUPLICATE_ACTION"))
	ss.add(n("rej_output_cardinality", "declared_outputs must be 1…64").
		ready().cmd(aReq).invID("inv-1").outs(0).want("OUTPUT_CARDINALITY_INVALID").cmd(aReq).invID("inv-1").outs(65).want("OUTPUT_CARDINALITY_INVALID").
		cmd(aReq).invID("inv-1").want("OUTPUT_CARDINALITY_INVALID").
		cmd(aReq).invID("inv-1").rawEdit(func(m map[string]any) { m["declared_outputs"] = 1.5 }).want("OUTPUT_CARDINALITY_INVALID").
		cmd(aReq).invID("inv-1").outs(64).want("ADMIT"))
	ss.add(n("rej_output_index_invalid", "output_index must name a declared slot").
		running("inv-1", 2).cmd(cReq).inv().idx(2).want("OUTPUT_INDEX_INVALID").cmd(cReq).inv().want("OUTPUT_INDEX_INVALID").
		cmd(cReq).inv().idx(-1).want("OUTPUT_INDEX_INVALID"))
	ss.add(n("rej_output_already_claimed", "a one-shot output may begin consumption only once, even after a timeout").
		running("inv-1", 2).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(0).want("-").
		cmd(cReq).inv().idx(0).want("OUTPUT_ALREADY_CLAIMED"))
	ss.add(n("rej_payload_mismatch", "payload fields outside their operation are ACTION_PAYLOAD_MISMATCH").
		ready().cmd(aReq).invID("inv-1").outs(1).idx(0).want("ACTION_PAYLOAD_MISMATCH").
		cmd(aReq).invID("inv-1").outs(1).want("ADMIT").cb(lifecycle.CallbackAdmitted).idx(0).want("ACTION_PAYLOAD_MISMATCH").
		cb(lifecycle.CallbackAdmitted).want("-").cmd(sReq).inv().outs(1).want("ACTION_PAYLOAD_MISMATCH").
		cmd(sReq).inv().want("SUBMIT").cb(lifecycle.CallbackSubmitted).want("-").
		cmd(cReq).inv().idx(0).outs(1).want("ACTION_PAYLOAD_MISMATCH").
		cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(1).want("ACTION_PAYLOAD_MISMATCH").
		cb(lifecycle.CallbackOutputConsumed).noIdx().want("ACTION_PAYLOAD_MISMATCH").cb(lifecycle.CallbackOutputConsumed).want("CHECK_HEALTH"))
	ss.add(n("rej_deadline_not_expired_order", "a premature explicit timeout is refused even when the token is right, and the action stays pending").
		ready().cmd(dReq).want("DRAIN_SESSION").cb(lifecycle.CallbackDeadlineExpired).at(49).want("DEADLINE_NOT_EXPIRED").cb(lifecycle.CallbackDrained).want("TEARDOWN"))
	ss.add(n("rej_rejected_event_leaves_state", "a rejected event changes nothing: not even last_observed_at").
		at(3).cmd(vReq).want("VALIDATE").cmd(pReq).at(7).want("ACTION_IN_PROGRESS").expect("last_observed_at", "3"))
}

func defineFailClosed(t *testing.T, ss *scenarioSet) {
	h := func() map[string]any {
		return map[string]any{"session_identity": identityJSON(runID), "deadlines": deadlinesJSON(stdDeadlines), "capacity": capacityJSON}
	}
	capWith := func(k string, v int) map[string]any {
		m := h()
		c := map[string]any{}
		for kk, vv := range capacityJSON {
			c[kk] = vv
		}
		c[k] = v
		m["capacity"] = c
		m["description"] = "capacity " + k + " other than 1/1/1/1/1/0 fails closed"
		return m
	}
	for _, c := range []struct {
		name, key string
		v         int
	}{{"failclosed_capacity_queue", "queue_capacity", 1}, {"failclosed_capacity_callers", "callers", 2},
		{"failclosed_capacity_in_flight", "maximum_in_flight", 2}, {"failclosed_capacity_owners", "session_owners", 0},
		{"failclosed_capacity_buffered", "maximum_buffered_results", 4}, {"failclosed_capacity_owner_concurrency", "owner_concurrency", 2}} {
		ss.add(fromHeader(t, "fail-closed", c.name, capWith(c.key, c.v)))
	}
	m := h()
	m["description"] = "protocol_version 2 fails closed"
	m["protocol_version"] = 2
	ss.add(fromHeader(t, "fail-closed", "failclosed_protocol_version", m))
	m = h()
	m["description"] = "an invalid session identity fails closed with INVALID_IDENTITY"
	m["session_identity"] = map[string]any{"task_execution_pk": 0, "attempt_number": 1, "execution_generation": 0, "run_id": "r"}
	ss.add(fromHeader(t, "fail-closed", "failclosed_identity", m))
	m = h()
	m["description"] = "a negative deadline fails closed"
	d := deadlinesJSON(stdDeadlines)
	d["drain"] = -1
	m["deadlines"] = d
	ss.add(fromHeader(t, "fail-closed", "failclosed_deadline", m))
	m = h()
	m["description"] = "a missing capacity fails closed"
	delete(m, "capacity")
	ss.add(fromHeader(t, "fail-closed", "failclosed_capacity_missing", m))
}

func defineSnapshots(t *testing.T, ss *scenarioSet) {
	// Base states built through the reducer.
	base := func(f func(b *sb) *sb) reducer.State {
		b := newScenario(t, "", "base", "", stdDeadlines)
		return f(b).s
	}
	checking := base(func(b *sb) *sb {
		return b.running("inv-1", 1).cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).want("CHECK_HEALTH")
	})
	seven := []any{"CAPACITY_RELEASE_FAILED", "CAPACITY_RELEASE_TIMEOUT", "CANCELLATION_FAILED", "CANCELLATION_TIMEOUT", "DRAIN_FAILED", "DRAIN_TIMEOUT", "TEARDOWN_TIMEOUT"}
	ss.add(fromSnapshot(t, "diagnostics", "diag_truncation", "restored with seven diagnostics: UNHEALTHY fills the eighth; TEARDOWN_FAILED then turns the last into DIAGNOSTICS_TRUNCATED",
		checking, func(m map[string]any) { m["cleanup_diagnostics"] = append([]any{}, seven...) }).
		cb(lifecycle.CallbackUnhealthy).want("TEARDOWN").
		expect("cleanup_diagnostics", "CAPACITY_RELEASE_FAILED,CAPACITY_RELEASE_TIMEOUT,CANCELLATION_FAILED,CANCELLATION_TIMEOUT,DRAIN_FAILED,DRAIN_TIMEOUT,TEARDOWN_TIMEOUT,HEALTH_CHECK_FAILED").
		cb(lifecycle.CallbackTeardownFailed).want("-").
		expect("cleanup_diagnostics", "CAPACITY_RELEASE_FAILED,CAPACITY_RELEASE_TIMEOUT,CANCELLATION_FAILED,CANCELLATION_TIMEOUT,DRAIN_FAILED,DRAIN_TIMEOUT,TEARDOWN_TIMEOUT,DIAGNOSTICS_TRUNCATED"))
	ss.add(fromSnapshot(t, "diagnostics", "diag_truncated_stays", "restored with eight diagnostics ending DIAGNOSTICS_TRUNCATED: a new code changes nothing",
		checking, func(m map[string]any) {
			m["cleanup_diagnostics"] = append(append([]any{}, seven...), "DIAGNOSTICS_TRUNCATED")
		}).
		cb(lifecycle.CallbackUnhealthy).want("TEARDOWN").
		expect("cleanup_diagnostics", "CAPACITY_RELEASE_FAILED,CAPACITY_RELEASE_TIMEOUT,CANCELLATION_FAILED,CANCELLATION_TIMEOUT,DRAIN_FAILED,DRAIN_TIMEOUT,TEARDOWN_TIMEOUT,DIAGNOSTICS_TRUNCATED"))
	ss.add(fromSnapshot(t, "diagnostics", "diag_deduplicated", "a diagnostic already kept is not repeated",
		checking, func(m map[string]any) { m["cleanup_diagnostics"] = []any{"HEALTH_CHECK_FAILED"} }).
		cb(lifecycle.CallbackUnhealthy).want("TEARDOWN").expect("cleanup_diagnostics", "HEALTH_CHECK_FAILED"))
	ss.add(newScenario(t, "diagnostics", "diag_cleared_at_admission", "diagnostics and the primary outcome of the previous invocation are cleared at admission", stdDeadlines).
		running("inv-1", 1).cmd(xReq).inv().want("CANCEL").cb(lifecycle.CallbackCancellationFailed).want("DRAIN_INVOCATION").
		cb(lifecycle.CallbackDrained).want("CHECK_HEALTH").cb(lifecycle.CallbackHealthy).want("-").expect("cleanup_diagnostics", "CANCELLATION_FAILED").
		cmd(aReq).invID("inv-2").outs(1).want("ADMIT").expect("cleanup_diagnostics", "", "primary_outcome", "<nil>"))

	ss.add(fromSnapshot(t, "snapshot", "snap_sequence_exhausted", "next_action_sequence at 2^63-1: issuing any action is ACTION_SEQUENCE_EXHAUSTED",
		base(func(b *sb) *sb { return b }), func(m map[string]any) { m["next_action_sequence"] = int64(math.MaxInt64) }).
		cmd(vReq).want("ACTION_SEQUENCE_EXHAUSTED").expect("session_state", "NEW"))
	ss.add(fromSnapshot(t, "snapshot", "snap_sequence_last", "next_action_sequence at 2^63-2 issues the last token",
		base(func(b *sb) *sb { return b }), func(m map[string]any) { m["next_action_sequence"] = int64(math.MaxInt64 - 1) }).
		cmd(vReq).want("VALIDATE").cb(lifecycle.CallbackValidated).want("-").cmd(pReq).want("ACTION_SEQUENCE_EXHAUSTED"))
	ss.add(fromSnapshot(t, "snapshot", "snap_invalid_state", "a restored snapshot that breaks an invariant (READY with an UNPREPARED graph) rejects every event with INVALID_STATE",
		base(func(b *sb) *sb { return b.ready() }), func(m map[string]any) { m["graph_disposition"] = "UNPREPARED" }).
		cmd(dReq).want("INVALID_STATE").cmd(tReq).want("INVALID_STATE"))
	ss.add(fromSnapshot(t, "snapshot", "snap_invalid_state_fallback", "a snapshot with strategy fallback reopened after preparation is INVALID_STATE",
		base(func(b *sb) *sb { return b.ready() }), func(m map[string]any) { m["strategy_fallback_allowed"] = true }).
		cmd(dReq).want("INVALID_STATE"))
	ss.add(fromSnapshot(t, "snapshot", "snap_resume_running", "restored while RUNNING, the invocation finishes as if never stopped",
		base(func(b *sb) *sb { return b.running("inv-1", 2) }), nil).
		cmd(cReq).inv().idx(0).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(0).want("-").
		cmd(cReq).inv().idx(1).want("CONSUME_OUTPUT").cb(lifecycle.CallbackOutputConsumed).idx(1).want("CHECK_HEALTH").cb(lifecycle.CallbackHealthy).want("-"))
	ss.add(fromSnapshot(t, "snapshot", "snap_resume_duplicate", "restored with SUBMIT just completed: a re-delivered SUBMITTED is still DUPLICATE_ACTION",
		base(func(b *sb) *sb { return b.running("inv-1", 1) }), nil).
		stray(lifecycle.CallbackSubmitted).inv().tok(reducer.Token(4, lifecycle.ActionSubmit)).want("DUPLICATE_ACTION").
		stray(lifecycle.CallbackAdmitted).inv().tok(reducer.Token(3, lifecycle.ActionAdmit)).want("STALE_ACTION_TOKEN"))
	ss.add(fromSnapshot(t, "snapshot", "snap_resume_pending_consume", "restored with CONSUME_OUTPUT pending: its callback must echo the index",
		base(func(b *sb) *sb { return b.running("inv-1", 2).cmd(cReq).inv().idx(1).want("CONSUME_OUTPUT") }), nil).
		cb(lifecycle.CallbackOutputConsumed).idx(0).want("ACTION_PAYLOAD_MISMATCH").cb(lifecycle.CallbackOutputConsumed).idx(1).want("-"))
	bad := fromSnapshot(t, "snapshot", "snap_schema_invalid", "a snapshot that is not schema 1 (unknown field) is refused",
		base(func(b *sb) *sb { return b }), func(m map[string]any) { m["payload"] = "x" })
	ss.add(bad)
	ss.add(fromSnapshot(t, "snapshot", "snap_capacity_changed", "a snapshot whose capacity is not 1/1/1/1/1/0 is refused",
		base(func(b *sb) *sb { return b }), func(m map[string]any) {
			m["capacity"].(map[string]any)["queue_capacity"] = 1
		}))
}
