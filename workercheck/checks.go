package workercheck

// all lists every check in the order they run: the handshake first (it
// learns the lock), then what is not supported, the rules, the
// operations, the control commands and shutdown. Some checks leave their
// worker to a later one (checks that share a worker must keep this
// order: unsupported/lock before rules/after-failed-init, rules/init-first
// before shutdown/before-init, client c2's checks before
// control/failpoint-crash). Ids are stable: reports and -run name them.
func all() []spec {
	return []spec{
		{ID: idDescribe, Rule: ruleStartup, run: checkDescribe},
		{ID: idReady, Rule: ruleReady, run: checkReadyFields},
		{ID: idRun, Rule: ruleRunInit, Servers: true, run: checkRun},
		{ID: idFpDeclared, Rule: ruleFailpoints, Servers: true, run: checkFailpoints},

		{ID: "unsupported/command", Rule: ruleUnsupported, Servers: true, run: checkUnknownCommand},
		{ID: idUnsupLock, Rule: ruleUnsupported, run: checkUnknownLock},
		{ID: idUnsupOption, Rule: ruleUnsupported, run: checkUnknownOption},

		{ID: "rules/one-object", Rule: ruleOneObject, Servers: true, run: checkOneObject},
		{ID: "rules/trailing-data", Rule: ruleTrailing, Servers: true, run: checkTrailing},
		{ID: "rules/unknown-key", Rule: ruleExactKeys, Servers: true, run: checkUnknownKey},
		{ID: "rules/duplicate-key", Rule: ruleDupKeys, Servers: true, run: checkDuplicateKey},
		{ID: "rules/null-value", Rule: ruleNull, Servers: true, run: checkNull},
		{ID: "rules/line-too-long", Rule: ruleLineLength, Servers: true, run: checkLineTooLong},
		{ID: "rules/init-first", Rule: ruleInitFirst, Servers: true, run: checkInitFirst},
		{ID: "rules/init-twice", Rule: ruleInitTwice, Servers: true, run: checkInitTwice},
		{ID: "rules/after-failed-init", Rule: ruleInitFailed, Servers: true, run: checkAfterFailedInit},
		{ID: "rules/op-reuse", Rule: ruleOpIDs, Servers: true, run: checkOpReuse},
		{ID: "rules/bounds/op", Rule: ruleOpIDs, Servers: true, run: checkOpBounds},
		{ID: "rules/bounds/ttl_ms", Rule: ruleBounds, Servers: true, run: checkTTLBounds},
		{ID: "rules/bounds/wait_ms", Rule: ruleBounds, Servers: true, run: checkWaitBounds},
		{ID: "rules/bounds/hold_ms", Rule: ruleBounds, Servers: true, run: checkHoldBounds},
		{ID: "rules/bounds/failpoint", Rule: ruleBounds, Servers: true, run: checkFailpointBounds},
		{ID: "rules/bounds/offset_ms", Rule: ruleBounds, Servers: true, run: checkOffsetBounds},
		{ID: "rules/bounds/strings", Rule: ruleStrings, Servers: true, run: checkStrings},
		{ID: "rules/required", Rule: ruleRequired, Servers: true, run: checkRequired},
		{ID: idMessages, Rule: ruleMessages, Servers: true, run: checkMessages},

		{ID: idOneReply, Rule: ruleOneReply, Servers: true, run: checkOneReply},
		{ID: idAcquire, Rule: ruleAcquire, Servers: true, run: checkAcquire},
		{ID: "ops/acquire-wait", Rule: ruleAcquire, Servers: true, run: checkAcquireWait},
		{ID: idCS, Rule: ruleCS, Servers: true, run: checkCS},
		{ID: idRelease, Rule: ruleRelease, Servers: true, run: checkRelease},
		{ID: "ops/release-old-lease", Rule: ruleRelease, Servers: true, run: checkReleaseOld},
		{ID: idExtend, Rule: ruleExtend, Servers: true, run: checkExtend},
		{ID: "ops/extend-old-lease", Rule: ruleExtendOld, Servers: true, run: checkExtendOld},
		{ID: "ops/valid-until-in-range", Rule: ruleValidUntil, Servers: true, run: checkValidUntil},
		{ID: idRenew, Rule: ruleRenew, Servers: true, run: checkRenew},
		{ID: idRound, Rule: ruleRound, Servers: true, run: checkRound},

		{ID: idFpUnknown, Rule: ruleFpUnknown, Servers: true, run: checkFailpointUnknown},
		{ID: "control/failpoint-crash", Rule: ruleFailpoint, Servers: true, run: checkFailpointCrash},
		{ID: idFpStop, Rule: ruleFailpoint, Servers: true, run: checkFailpointStop},
		{ID: "control/failpoint-sleep", Rule: ruleFailpoint, Servers: true, run: checkFailpointSleep},
		{ID: "control/failpoint-count", Rule: ruleFailpoint, Servers: true, run: checkFailpointCount},
		{ID: idFpOff, Rule: ruleFailpoint, Servers: true, run: checkFailpointOff},
		{ID: idClock, Rule: ruleClock, Servers: true, run: checkClock},
		{ID: idCut, Rule: ruleCut, Servers: true, run: checkCut},
		{ID: "control/at-once", Rule: ruleAtOnce, Servers: true, run: checkAtOnce},
		{ID: idEndpoints, Rule: ruleEndpoints, Servers: true, run: checkEndpoints},

		{ID: idShutdown, Rule: ruleShutdown, Servers: true, run: checkShutdown},
		{ID: "shutdown/before-init", Rule: ruleShutdown, run: checkShutdownFirst},
	}
}
