import RelayCore
import RelayIO
