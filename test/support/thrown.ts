// The error a synchronous call throws, checked to be of the expected class.
export function thrown<E extends Error>(fn: () => unknown, type: abstract new (...args: never[]) => E): E {
  try {
    fn()
  } catch (err) {
    if (err instanceof type) return err
    throw new Error(`expected a ${type.name}, got ${String(err)}`, { cause: err })
  }
  throw new Error(`expected a ${type.name}, nothing was thrown`)
}
