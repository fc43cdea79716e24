import t from 'tap'
import { grpcStatusOf } from '../../../src/server/grpc-status.js'
import { ProviderError } from '../../../src/errors.js'
import { NodeBudget } from '../../../src/mount/budget.js'
import { jsonSize } from '../../../src/util/json-size.js'
import { thrown } from '../../support/thrown.js'

t.test('a Mount is stopped by the object that crosses -max-mount-bytes, named', async (t) => {
  const node = new NodeBudget({ mountBytes: 1000, nodeBytes: 10_000 })
  const mount = node.open('ns')
  mount.charge(600, 'object "a"')
  mount.charge(400, 'object "b"')
  t.equal(mount.bytesCharged, 1000, 'exactly the budget is allowed')
  const err = thrown(() => mount.charge(1, 'object "c" (GET secret/data/c)'), ProviderError)
  t.equal(err.code, 'MOUNT_BUDGET_EXCEEDED')
  t.equal(grpcStatusOf(err.code), 8, 'RESOURCE_EXHAUSTED')
  t.match(
    err.message,
    /^object "c" \(GET secret\/data\/c\) takes the Mount past its budget of 1000 B \(1000 bytes, provider flag -max-mount-bytes\)/,
  )
  // Later work fails with the first crossing, not a new error naming a later object.
  t.equal(
    thrown(() => mount.charge(1, 'object "d"'), ProviderError),
    err,
  )
  t.equal(
    thrown(() => mount.check(), ProviderError),
    err,
  )
  t.equal(node.bytesInUse, 1000)
  mount.release()
  mount.release()
  t.equal(node.bytesInUse, 0, 'released once, whatever the outcome')
})

t.test('the node budget: a Mount that cannot reserve fails at once; small Mounts fit beside a big one', async (t) => {
  const node = new NodeBudget({ mountBytes: 1000, nodeBytes: 2500 })
  const big1 = node.open('ns-a')
  const big2 = node.open('ns-b')
  big1.charge(1000, 'object "x"')
  big2.charge(1000, 'object "y"')
  const small = node.open('ns-c')
  small.charge(400, 'object "small"')
  const late = node.open('ns-d')
  const err = thrown(() => late.charge(200, 'object "late"'), ProviderError)
  t.equal(err.code, 'MOUNT_BUDGET_EXCEEDED')
  t.match(
    err.message,
    /^object "late": the provider's memory budget for all Mounts in flight on this node is spent \(2\.4 KiB, provider flag -max-node-mount-bytes\); the driver retries this Mount/,
  )
  t.equal(node.bytesInUse, 2400, 'a refused charge takes nothing')
  big1.release()
  const next = node.open('ns-a')
  next.charge(900, 'object "next"')
  t.equal(node.bytesInUse, 2300)
  // A released budget charges nothing more to the node.
  big1.release()
  t.throws(() => big1.charge(1, 'object "after"'))
  t.equal(node.bytesInUse, 2300)
})

t.test('answers are charged by their JSON size; the count stops past the limit', async (t) => {
  t.equal(jsonSize('abc'), 5)
  t.equal(jsonSize({ data: { password: 'x'.repeat(100) } }), 2 + 8 + 2 + 12 + 102)
  t.ok(Math.abs(jsonSize([1, true, null, 'a']) - JSON.stringify([1, true, null, 'a']).length) < 32)
  const big = { data: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, 'v'.repeat(100)])) }
  const exact = jsonSize(big)
  t.ok(exact > JSON.stringify(big).length * 0.9 && exact < JSON.stringify(big).length * 1.2)
  t.ok(jsonSize(big, 1000) < 2000, 'stops soon after the limit')
  // Deep answers do not exhaust the stack.
  let deep: unknown = 'x'
  for (let i = 0; i < 100_000; i++) deep = [deep]
  t.equal(jsonSize(deep), 100_000 * 3 + 3)
  const node = new NodeBudget({ mountBytes: 1000, nodeBytes: 10_000 })
  const mount = node.open('ns')
  mount.chargeAnswer({ data: { a: 'b' } }, 'object "a"')
  t.equal(thrown(() => mount.chargeAnswer(big, 'objects "b", "c"'), ProviderError).code, 'MOUNT_BUDGET_EXCEEDED')
})

t.test('crossing its own limit is a refusal that would repeat; a spent node budget is not', async (t) => {
  const node = new NodeBudget({ mountBytes: 10, nodeBytes: 100 })
  const mount = node.open('ns')
  t.notOk(mount.overOwnLimit)
  thrown(() => mount.charge(11, 'object "a"'), ProviderError)
  t.ok(mount.overOwnLimit, 'crossed -max-mount-bytes')
  // The node's budget being spent is transient: not a refusal of this Mount's own.
  const tight = new NodeBudget({ mountBytes: 100, nodeBytes: 10 })
  const m = tight.open('ns')
  thrown(() => m.charge(11, 'object "b"'), ProviderError)
  t.notOk(m.overOwnLimit)
})

t.test("one namespace's Mounts together hold at most half the node budget", async (t) => {
  const node = new NodeBudget({ mountBytes: 1000, nodeBytes: 2000 })
  const a = node.open('attacker')
  a.charge(1000, 'object "a1"')
  const b = node.open('attacker')
  const err = thrown(() => b.charge(1, 'object "a2"'), ProviderError)
  t.equal(err.code, 'MOUNT_BUDGET_EXCEEDED')
  t.match(err.message, /this namespace's Mounts in flight on this node hold half of the provider's memory budget/)
  const victim = node.open('victim')
  victim.charge(1000, 'object "v"')
  t.equal(node.bytesInUse, 2000, "the other half is the victim's to use")
  a.release()
  node.open('attacker').charge(500, 'object "a3"')
  t.equal(node.bytesInUse, 1500)
})
