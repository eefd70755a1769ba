"""The lab NPU emulator: stand-in Ascend HDK installers, npu-smi, fault injection, a package mirror."""
