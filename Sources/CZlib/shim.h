// zlib for WebSocketCore's permessage-deflate (RFC 7692); nothing else of C reaches the codec.
#include <zlib.h>
