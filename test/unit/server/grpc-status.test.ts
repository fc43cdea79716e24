import t from 'tap'
import { status as GrpcStatus } from '@grpc/grpc-js'
import { ERROR_CATALOGUE, type ErrorCode } from '../../../src/errors.js'
import { GRPC_STATUS_OF, grpcStatusName, grpcStatusOf, mountStatusName } from '../../../src/server/grpc-status.js'

const EXPECTED: Record<ErrorCode, GrpcStatus> = {
  BAD_REQUEST: GrpcStatus.INVALID_ARGUMENT,
  BAD_PARAMETER: GrpcStatus.INVALID_ARGUMENT,
  BAD_OBJECT: GrpcStatus.INVALID_ARGUMENT,
  BAD_FILE_PATH: GrpcStatus.INVALID_ARGUMENT,
  NO_POD_TOKEN: GrpcStatus.FAILED_PRECONDITION,
  KUBERNETES_API: GrpcStatus.UNAVAILABLE,
  VAULT_LOGIN_DENIED: GrpcStatus.PERMISSION_DENIED,
  VAULT_PERMISSION_DENIED: GrpcStatus.PERMISSION_DENIED,
  VAULT_NOT_FOUND: GrpcStatus.NOT_FOUND,
  SECRET_KEY_NOT_FOUND: GrpcStatus.NOT_FOUND,
  VAULT_BAD_REQUEST: GrpcStatus.INVALID_ARGUMENT,
  VAULT_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  VAULT_RATE_LIMITED: GrpcStatus.RESOURCE_EXHAUSTED,
  VAULT_BAD_RESPONSE: GrpcStatus.FAILED_PRECONDITION,
  DECODE_FAILED: GrpcStatus.INVALID_ARGUMENT,
  OUTPUT_FAILED: GrpcStatus.INVALID_ARGUMENT,
  VAULT_ADDRESS_NOT_ALLOWED: GrpcStatus.PERMISSION_DENIED,
  RESPONSE_TOO_LARGE: GrpcStatus.RESOURCE_EXHAUSTED,
  SECRET_TOO_LARGE: GrpcStatus.RESOURCE_EXHAUSTED,
  NO_OBJECT_VERSIONS: GrpcStatus.FAILED_PRECONDITION,
  MOUNT_BUDGET_EXCEEDED: GrpcStatus.RESOURCE_EXHAUSTED,
  VAULT_RESPONSE_TOO_LARGE: GrpcStatus.RESOURCE_EXHAUSTED,
  VAULT_REDIRECT_REFUSED: GrpcStatus.FAILED_PRECONDITION,
  POD_TOKEN_MISMATCH: GrpcStatus.PERMISSION_DENIED,
  LOGIN_IDENTITY_MISMATCH: GrpcStatus.PERMISSION_DENIED,
  AUDIENCE_NOT_ALLOWED: GrpcStatus.PERMISSION_DENIED,
  DEADLINE_EXCEEDED: GrpcStatus.DEADLINE_EXCEEDED,
  CANCELLED: GrpcStatus.CANCELLED,
  HMAC_KEY_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  SHUTTING_DOWN: GrpcStatus.UNAVAILABLE,
  INTERNAL: GrpcStatus.INTERNAL,
}

t.test('every catalogue code has a meaningful gRPC status', async (t) => {
  const codes = Object.keys(ERROR_CATALOGUE) as ErrorCode[]
  t.strictSame(Object.keys(GRPC_STATUS_OF).sort(), [...codes].sort(), 'one status per code, no more')
  for (const code of codes) {
    const s = grpcStatusOf(code)
    t.not(s, GrpcStatus.OK, code)
    t.not(s, GrpcStatus.UNKNOWN, code)
    t.ok(Object.values(GrpcStatus).includes(s), `${code}: a real status`)
  }
  t.strictSame(GRPC_STATUS_OF, EXPECTED)
  // Only UNAVAILABLE is retried by the driver; no user mistake may map to it.
  for (const code of [
    'BAD_REQUEST',
    'BAD_PARAMETER',
    'BAD_OBJECT',
    'BAD_FILE_PATH',
    'VAULT_LOGIN_DENIED',
    'VAULT_PERMISSION_DENIED',
    'SECRET_KEY_NOT_FOUND',
    'DECODE_FAILED',
    'OUTPUT_FAILED',
  ] as const) {
    t.not(grpcStatusOf(code), GrpcStatus.UNAVAILABLE, code)
  }
})

t.test('status names as the metrics and the CLI show them', async (t) => {
  t.equal(grpcStatusName(0), 'OK')
  t.equal(grpcStatusName(14), 'UNAVAILABLE')
  t.equal(grpcStatusName(999), 'UNKNOWN')
  t.equal(mountStatusName(undefined), 'OK')
  t.equal(mountStatusName('VAULT_PERMISSION_DENIED'), 'PERMISSION_DENIED')
  t.equal(mountStatusName('RESPONSE_TOO_LARGE'), 'RESOURCE_EXHAUSTED')
})

t.test(
  "the driver's cancellation is CANCELLED, its deadline DEADLINE_EXCEEDED: two statuses, two metric labels",
  async (t) => {
    t.equal(grpcStatusOf('CANCELLED'), GrpcStatus.CANCELLED)
    t.equal(grpcStatusOf('DEADLINE_EXCEEDED'), GrpcStatus.DEADLINE_EXCEEDED)
    t.equal(mountStatusName('CANCELLED'), 'CANCELLED')
    t.equal(mountStatusName('DEADLINE_EXCEEDED'), 'DEADLINE_EXCEEDED')
  },
)
