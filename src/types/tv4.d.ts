// tv4 ships no types; what src/vault/request-validator.ts uses of it (the validator node-vault uses).
declare module 'tv4' {
  const tv4: {
    validate(data: unknown, schema: object): boolean
    /** The last failed validate()'s error. */
    readonly error: unknown
  }
  export default tv4
}
