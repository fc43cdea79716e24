// The type of proto/messages.cjs as src/server/proto.ts sees it (it states the shape it uses).
declare const messages: unknown
export = messages
