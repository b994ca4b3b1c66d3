/* Go's math/rand, bit for bit (see gorand.h). */
#include "sim/gorand.h"

#define INT32MAX ((int32_t)0x7fffffff)
#define MASK63 ((uint64_t)INT64_MAX)

/* The state of the generator after 7.8e12 steps from seed 1 (Go's
 * rngCooked; data, verified by the regression goldens of the unit test). */
static const uint64_t cooked[FAIR_GORAND_LEN] = {
    UINT64_C(0xc5f74a33eb98ffea), UINT64_C(0xc07b4a41ba965f5b), UINT64_C(0x135ec513cb81af0f),
    UINT64_C(0x4a04fb5ca74395eb), UINT64_C(0xa7e8831c7710cf8e), UINT64_C(0x7d5de4e88f37c1c3),
    UINT64_C(0x6321cf7743ff85a9), UINT64_C(0x42cb06556a9ff961), UINT64_C(0x6e26c8d140e8d7d2),
    UINT64_C(0x49a7511f3411faa0), UINT64_C(0x71ed774922a65055), UINT64_C(0x9d5c9fc65fea2d5c),
    UINT64_C(0x3fbdab394a014368), UINT64_C(0x70fa33596992340b), UINT64_C(0xae10fb4ecea66a02),
    UINT64_C(0xf79fbca98bbcd18a), UINT64_C(0x97f7ccb12ea380ac), UINT64_C(0x0191d794caf32b1b),
    UINT64_C(0x3f6a323424e32caf), UINT64_C(0xc642cc921f01142b), UINT64_C(0xa122869f4ff38068),
    UINT64_C(0xa5b1a31127af3920), UINT64_C(0x5b07a4f9bdc29d96), UINT64_C(0x6a2a973c29812586),
    UINT64_C(0x6aa433dbf77a52e1), UINT64_C(0x8394216e3b8ac99e), UINT64_C(0xdb80a9c5515b997c),
    UINT64_C(0x03c3f2eff3cbf769), UINT64_C(0xa6b5e431eeff210c), UINT64_C(0x0ec85334992953f5),
    UINT64_C(0x2e6a1432df10d1e9), UINT64_C(0xbde4629959d1b149), UINT64_C(0x67994c3876387951),
    UINT64_C(0x0e15d461559bae63), UINT64_C(0xbdbf96c4e9d2a077), UINT64_C(0xb04f62866ada20f3),
    UINT64_C(0x2190da1646db97bf), UINT64_C(0x5071873c1832957a), UINT64_C(0x3e3b503a19da904b),
    UINT64_C(0x33e388a5f2c78528), UINT64_C(0xbec70bac19d0e877), UINT64_C(0x00256970f81bf072),
    UINT64_C(0xf7d18a14f64fa886), UINT64_C(0xa46ef978b4d4734c), UINT64_C(0x782ff1573127a78e),
    UINT64_C(0x00241b0ad59beba6), UINT64_C(0xdac549591fe95b2f), UINT64_C(0x6195faf2884c2d39),
    UINT64_C(0x569c2bbdb0ef345d), UINT64_C(0x0b8b6039508ce21e), UINT64_C(0xef1576705435d2bb),
    UINT64_C(0x1d5e900af5f1d8f7), UINT64_C(0x1e902d187d7fd437), UINT64_C(0x7f227b7c8fe0eb79),
    UINT64_C(0x38790e6201ebbb98), UINT64_C(0x44818eac7922e171), UINT64_C(0x0658d6c550dad340),
    UINT64_C(0x84bfb894cc72969a), UINT64_C(0xa7855141e3b329bd), UINT64_C(0x9cb31556b1bae746),
    UINT64_C(0x3ca09004f9686f49), UINT64_C(0x0c50146d7e508769), UINT64_C(0xcd35d8ff935ac970),
    UINT64_C(0xde9818b4aa1554d8), UINT64_C(0x4df37efd6433daa0), UINT64_C(0xf591e9ad05b2e056),
    UINT64_C(0x1767eb0bdbf83e29), UINT64_C(0xb8247292535299f2), UINT64_C(0xbae645975a5e4ceb),
    UINT64_C(0xecea78155c3bc32b), UINT64_C(0x4e295e5357ace86e), UINT64_C(0x8b906a9a4fadbb08),
    UINT64_C(0xfd50086af64463c9), UINT64_C(0xad0385acfd19d6fc), UINT64_C(0xbbe6d4a5e1d13a9f),
    UINT64_C(0xfc099f33b79b039c), UINT64_C(0xd9782224840c5a35), UINT64_C(0x174e38bc45d51acf),
    UINT64_C(0x53f82f9f54de4e3e), UINT64_C(0xe10dfa0a87b3ef0e), UINT64_C(0xea09d9ec7b439769),
    UINT64_C(0x519ec3c7cc4c5011), UINT64_C(0x0b47990fc413e3d5), UINT64_C(0x3f07e07ecfce5be2),
    UINT64_C(0xa5d2d0b8b71922be), UINT64_C(0x451eea1fc87cc761), UINT64_C(0xc8505edef7f1d6dd),
    UINT64_C(0xfb6ed78e001ce905), UINT64_C(0xd7cc0a3644f468ba), UINT64_C(0x14c231db2e4429d0),
    UINT64_C(0xe21ccd9a90943dd3), UINT64_C(0x664869f5288fc2d1), UINT64_C(0xddc56f604e168fb5),
    UINT64_C(0x4151e4abb0b1faf6), UINT64_C(0xec9647e8cea7b927), UINT64_C(0x76a742187dbe61de),
    UINT64_C(0x80778d4049780e3c), UINT64_C(0x92714446c26ce413), UINT64_C(0x65475bc019e7700b),
    UINT64_C(0x0e08781d60d86d17), UINT64_C(0x9f0f0fe9d5f571e0), UINT64_C(0x476e62bf33886e57),
    UINT64_C(0x8c710cff524eb4e6), UINT64_C(0x24e856a59e3899a5), UINT64_C(0x549f7c8b5783189a),
    UINT64_C(0x9808539c06020014), UINT64_C(0xb8fc59eeb2515467), UINT64_C(0xf38fff8b8499a614),
    UINT64_C(0xf5a62be73a3d5222), UINT64_C(0x508b82832b4c4838), UINT64_C(0xf5109fc7682ff8de),
    UINT64_C(0xd31cadf15cc53f0c), UINT64_C(0xc1720509406b5826), UINT64_C(0xe900715210bc96fa),
    UINT64_C(0x0704fe3536d393fb), UINT64_C(0xc65c9b6eccaefb4a), UINT64_C(0x8bafc73092be4019),
    UINT64_C(0x07f0b599d77889ea), UINT64_C(0x18de0a49b8fa589b), UINT64_C(0x2f174e71c9830ff0),
    UINT64_C(0xb470b780a26785dd), UINT64_C(0x20a6b76123b162be), UINT64_C(0x91efbd24cdc58322),
    UINT64_C(0xfb7bb75026b32623), UINT64_C(0xd03d1caf9a1f04d0), UINT64_C(0xa5f0f909bcaee921),
    UINT64_C(0x46aa7ced9d1c8e0b), UINT64_C(0xfcd8a79e7a62b6f9), UINT64_C(0x3ac4cf05bce83f14),
    UINT64_C(0x45c579a008a037c4), UINT64_C(0x4053888e527912d0), UINT64_C(0xf88fa0b2289f7b17),
    UINT64_C(0x51fbaf5d2002bdda), UINT64_C(0x8ae403a812ca4784), UINT64_C(0x0d7ea237329fa450),
    UINT64_C(0xcb3f04bf02b6f208), UINT64_C(0xc796643e8a39ed33), UINT64_C(0xfd92d79ed75b6419),
    UINT64_C(0x216821c8b258e8ac), UINT64_C(0xe93d3aff7b46e931), UINT64_C(0x36b0858cfcb72b6a),
    UINT64_C(0xae5e3c9fe7ff1167), UINT64_C(0x2af4c395391cc2a5), UINT64_C(0xe6c4fd076feb7676),
    UINT64_C(0x50efb5fb31ede773), UINT64_C(0x6d7f243359dbfcae), UINT64_C(0x7193e740340e0fdb),
    UINT64_C(0x8ff51f73a4c6dd92), UINT64_C(0x94534b6efa1ca966), UINT64_C(0xc06a724520d70d41),
    UINT64_C(0x30cd16bd19120592), UINT64_C(0x8d456b580c2cd6dc), UINT64_C(0x5c62bc0d6a8429ef),
    UINT64_C(0x48744ea9b8e9395e), UINT64_C(0x18ef14825c84aee1), UINT64_C(0x4a1e32b73a71e234),
    UINT64_C(0x0fee6f27c45228c0), UINT64_C(0x464e2e3be0d2e4a1), UINT64_C(0x23bb67f482e16008),
    UINT64_C(0x0f11b541e8247327), UINT64_C(0xae7df90c7d2aafd7), UINT64_C(0x54e1f496142c391a),
    UINT64_C(0x1d400ef625fa4274), UINT64_C(0x9906966610ce9e13), UINT64_C(0x22455934d7c1ccda),
    UINT64_C(0xe6414239b7da9220), UINT64_C(0xb49f9091f6275556), UINT64_C(0x82916b3d64288abd),
    UINT64_C(0x9f52d0a1c7066fa0), UINT64_C(0x642a666cfb8cf0a1), UINT64_C(0x8c9d981db063ad83),
    UINT64_C(0x63dfa26158b67e4a), UINT64_C(0xce3cfe36ebecc2df), UINT64_C(0xb6e4eb2ba55364ff),
    UINT64_C(0x6fd2179e0d7717d1), UINT64_C(0xb971a2b7362247db), UINT64_C(0xdbe5cf25d510c53b),
    UINT64_C(0x930f28ad73735261), UINT64_C(0x5a95dd01047feb8b), UINT64_C(0x30adb1407358b45a),
    UINT64_C(0x7fb44776784c1083), UINT64_C(0x1b20e8f4eb075406), UINT64_C(0xdc275f40b6c7c0d9),
    UINT64_C(0x732df8dda67b0f27), UINT64_C(0xb62637afc484c885), UINT64_C(0x61c98649838bf631),
    UINT64_C(0xdf061fee30277f58), UINT64_C(0x95d322052dac1455), UINT64_C(0x7ad30486e478aee9),
    UINT64_C(0x3267221f4aced145), UINT64_C(0x479807052c3566b8), UINT64_C(0xa8025350a77ea0b9),
    UINT64_C(0x421a7ec2fc169cd3), UINT64_C(0x57273ab05129a700), UINT64_C(0xbae4f7fb719f43f2),
    UINT64_C(0x1c5bd857e8b8bf48), UINT64_C(0xdad594186971f359), UINT64_C(0x3f518aad9c427014),
    UINT64_C(0x4c43c3b8cc8e8218), UINT64_C(0x981fba566f92dfb7), UINT64_C(0x07acaac55435c0ac),
    UINT64_C(0x5fb0881038cbbc8f), UINT64_C(0xf243b5556cbeba73), UINT64_C(0x63149f303be79fd4),
    UINT64_C(0xf6aade431f712475), UINT64_C(0x4cd2a557b6cbc24b), UINT64_C(0x21bc6975c169de72),
    UINT64_C(0xcaf78cf40c768134), UINT64_C(0xf13cdd624a12159f), UINT64_C(0xd573d0041b390d3e),
    UINT64_C(0x69ea8bd93bade806), UINT64_C(0x578baf3d78cd61f2), UINT64_C(0x3318a93a7f689dc9),
    UINT64_C(0x2da7501cbdbe5235), UINT64_C(0x5b6d448c9bb11200), UINT64_C(0x036566ca66f231b4),
    UINT64_C(0xb89e51e9e2b737e4), UINT64_C(0x704687541c9b68cf), UINT64_C(0x28df28a35d2937c9),
    UINT64_C(0x8bfeb2756944b0b5), UINT64_C(0x29c24143c2234e9c), UINT64_C(0xf4fd794f8d02068f),
    UINT64_C(0x0590f068df15e57d), UINT64_C(0xe4ad98adab8dc009), UINT64_C(0x4155b1828194a406),
    UINT64_C(0xce463027d4ff743f), UINT64_C(0xd306231168ec0845), UINT64_C(0xae01984986c0c339),
    UINT64_C(0xcc61983656980e5a), UINT64_C(0xb6b4b212af3d051a), UINT64_C(0x70aaf14a706ce17a),
    UINT64_C(0x3547cbc995de3a40), UINT64_C(0x6202b8d9e9e8565f), UINT64_C(0x8a49ea181ddbac34),
    UINT64_C(0x53a7bcb92853ce41), UINT64_C(0xa2aa132546a16f3a), UINT64_C(0xd6c166634bc92862),
    UINT64_C(0x92ff6acebc93a071), UINT64_C(0x7a403280a96cea51), UINT64_C(0x5a183b8f81665a24),
    UINT64_C(0x222b4c80d2c0e464), UINT64_C(0x859e3d4d58ba3aa6), UINT64_C(0xb9a28389cb2fe563),
    UINT64_C(0x83a20cb89512fee4), UINT64_C(0xcbd691b061b30cbd), UINT64_C(0x8839baf8f3ac9f09),
    UINT64_C(0x5ddf03b3edd1c4b8), UINT64_C(0xf62694c4cb82ed09), UINT64_C(0xd0c603b9879bd360),
    UINT64_C(0x8558daf780426657), UINT64_C(0xc87fdb1b629e32ab), UINT64_C(0xd77938d516862fe1),
    UINT64_C(0xe33a56962759ec00), UINT64_C(0x051bc82f174b90d9), UINT64_C(0xab3b5debcad25c86),
    UINT64_C(0xa8766bd0dd9b35db), UINT64_C(0x425f26b683ca1487), UINT64_C(0x5d3c2b40a076f653),
    UINT64_C(0x7464e98a72f8d634), UINT64_C(0x2f02dd3eea4e7841), UINT64_C(0x40977fe842527877),
    UINT64_C(0xfbf01ad4922b1d62), UINT64_C(0xca959c2a8b4eea29), UINT64_C(0x69ca7ca110533802),
    UINT64_C(0x6b36496357247bd9), UINT64_C(0x7f7c07645ca7b232), UINT64_C(0xb8c63fa50ae3677b),
    UINT64_C(0xa0b7fd74703947d8), UINT64_C(0x231fb1a0dc8ce079), UINT64_C(0x16b63342b7c96e77),
    UINT64_C(0xcd39a909d7e68027), UINT64_C(0x1427685b19caecdd), UINT64_C(0x9c9c6cd28e91b74d),
    UINT64_C(0x91c1fb790e0d3a54), UINT64_C(0x7e67d3bdb81bb611), UINT64_C(0xd396fc0d89f6e211),
    UINT64_C(0x457eacfbb049eb22), UINT64_C(0x1de1979bf5654dd5), UINT64_C(0x5d436ca7585d28ca),
    UINT64_C(0xd3d7e2863218d979), UINT64_C(0x2fa7be3ccf9d1645), UINT64_C(0x1fb7a7e17b9eccb0),
    UINT64_C(0x2b2b1fced929c282), UINT64_C(0xd85a90375e64310d), UINT64_C(0xcb336a1611227dbd),
    UINT64_C(0x636925f5baf870cd), UINT64_C(0x43e0d0254b84715e), UINT64_C(0x080ec57577219247),
    UINT64_C(0x175ee40f58fbd971), UINT64_C(0x3d78cc365badbce1), UINT64_C(0x8495a07683903295),
    UINT64_C(0x8f89c0d3396a3b53), UINT64_C(0x639ba81c88d888a6), UINT64_C(0x3faf8d9c775ca781),
    UINT64_C(0xeac40d3f519d2893), UINT64_C(0x01fe31d8c7df7dc4), UINT64_C(0x036d8003387dd6db),
    UINT64_C(0x8c0621f768220a97), UINT64_C(0x59d6a8cc7a082707), UINT64_C(0x2aea572af8467560),
    UINT64_C(0x1c910136c9fdf9c3), UINT64_C(0xc73eddfe111385e2), UINT64_C(0x79edb9a2a6a387df),
    UINT64_C(0xd556d17adcc5f6fb), UINT64_C(0xf72709f96b28a3c7), UINT64_C(0x552d69f0428dce6a),
    UINT64_C(0x9cbbb4be9a92c216), UINT64_C(0x4f37aef6caf41c5d), UINT64_C(0xd3431110cdd7a998),
    UINT64_C(0x3c7c1de5b3cc1dca), UINT64_C(0x048311a7625eabd9), UINT64_C(0x5ee41cb40ca81e2c),
    UINT64_C(0x43385b68e51dbffc), UINT64_C(0xd36a1f70d4f9a2ff), UINT64_C(0xcaeaccb927b0cb5c),
    UINT64_C(0x3fddae4163e010e4), UINT64_C(0x0e7f5452a8c91ee0), UINT64_C(0x7e61315458970ccb),
    UINT64_C(0x8b821c0b10054c75), UINT64_C(0xc444cf11f9840608), UINT64_C(0x2536b7a7602f6b4d),
    UINT64_C(0x331786d5a126f97f), UINT64_C(0xc9a9cd708372db93), UINT64_C(0xd7e75a07542451da),
    UINT64_C(0xa4e5a10d28659104), UINT64_C(0x9024ebcbf8b8e6af), UINT64_C(0x08137c3380f32523),
    UINT64_C(0x32a31118a95e425f), UINT64_C(0xbd640b6140802b1e), UINT64_C(0x967e3cd0f12b1c5f),
    UINT64_C(0x031089e87fbab9a7), UINT64_C(0xf11bfbb3ba3e0841), UINT64_C(0x3b7fc3ad0d1cd36b),
    UINT64_C(0xbfb2f4d968b759c3), UINT64_C(0x4c8475564905d202), UINT64_C(0xe0a80b2a6236fa83),
    UINT64_C(0x86a5b8671a833ae3), UINT64_C(0x79608828eb8fe58d), UINT64_C(0x032bcb9f5721e717),
    UINT64_C(0x12d224e5dc7e16de), UINT64_C(0x29e68b8251e0d495), UINT64_C(0x2bc04a7508cb08a3),
    UINT64_C(0x85f835a648329d25), UINT64_C(0x4d2799f797ec19a8), UINT64_C(0x443aadc076f2ed10),
    UINT64_C(0x89357de277e46717), UINT64_C(0xaf7907aeb63c9d6c), UINT64_C(0x27ce6be004db5b35),
    UINT64_C(0x9bbf0228d95bf1d8), UINT64_C(0xae31e17b25e1b363), UINT64_C(0x23e9429e957db925),
    UINT64_C(0x950e5fab3c7e6825), UINT64_C(0x2aea3671bf9f5933), UINT64_C(0xb2d2ef433932102c),
    UINT64_C(0x0d7ed21ec77fc8c1), UINT64_C(0xea5f1280f48e6247), UINT64_C(0x17b747cdf311ae42),
    UINT64_C(0xe001060ea9fa838e), UINT64_C(0xaca7508c5bccfc84), UINT64_C(0xa3aaa0843f04f963),
    UINT64_C(0xf949f7a4e8ebd3a5), UINT64_C(0x22876bdefd41df6c), UINT64_C(0xc124724f07e69e7c),
    UINT64_C(0xbf470df23d5aa6b4), UINT64_C(0x2998352099f590b8), UINT64_C(0x11cc90f45895653d),
    UINT64_C(0x03550da1ab28f8d1), UINT64_C(0x7842cc5c2b1b34db), UINT64_C(0x08b79b3694ac8400),
    UINT64_C(0xbf72d50b84f96e2c), UINT64_C(0x947079f8eb08f590), UINT64_C(0x696cb72182050872),
    UINT64_C(0xd4885bc9ac36d5a7), UINT64_C(0x6cb888b579fe97e1), UINT64_C(0x629482105204e4fd),
    UINT64_C(0x3cef790816b93701), UINT64_C(0xbda77a26be136556), UINT64_C(0xfb8f861314dda828),
    UINT64_C(0x08a2b7b803ae5bcf), UINT64_C(0xd3c8a91ed0323140), UINT64_C(0x870001a0b867ec3e),
    UINT64_C(0xe4f6c1f9b093dde5), UINT64_C(0x8e086becbc0b8378), UINT64_C(0x9e755197c06ffcc7),
    UINT64_C(0x246705ee34f204f8), UINT64_C(0xc7927582d516264c), UINT64_C(0xb3e17ba47546133c),
    UINT64_C(0xa33f111b5caab4e2), UINT64_C(0xa23d8e161443255e), UINT64_C(0x48f128b344d0819c),
    UINT64_C(0x6cd122fb39ab204d), UINT64_C(0x5c2910bf238f36aa), UINT64_C(0x90aeac10e05f9bba),
    UINT64_C(0x9d54b6b00fe42aca), UINT64_C(0xe88f64387a0fcdcb), UINT64_C(0xc45a205f01473609),
    UINT64_C(0xc768ed8eb6b8c82d), UINT64_C(0xf225920d43fd23ac), UINT64_C(0x25bdad5a8a817964),
    UINT64_C(0x7ebc9cefb9015aab), UINT64_C(0x3c1ee78fa4ea733d), UINT64_C(0xe30e85d1757922a4),
    UINT64_C(0x61123dc5e081fe21), UINT64_C(0xdc86c11079674e66), UINT64_C(0x8918973fb91ab9fb),
    UINT64_C(0x00d4ee55ca6d8c2a), UINT64_C(0xd500476d5215b5b5), UINT64_C(0xfc5068b3e2ea6d2a),
    UINT64_C(0x205da910dd23cb85), UINT64_C(0x979b5e11369f775b), UINT64_C(0x2bc872747d65ead7),
    UINT64_C(0x96ba83aa2ac19de7), UINT64_C(0xa2258710d3a06bd5), UINT64_C(0x02bcfbd9169343e7),
    UINT64_C(0x88eecd99246b6273), UINT64_C(0x234b301b2d3c0302), UINT64_C(0x3c61095d0931ecbf),
    UINT64_C(0xc1fbeae253e44498), UINT64_C(0x9bf8d56e39d28810), UINT64_C(0xef025e3275852770),
    UINT64_C(0x3b81d83bc6a5b26d), UINT64_C(0x740e3af17358a76b), UINT64_C(0x5a0491610c217837),
    UINT64_C(0xb234c04ee9707bba), UINT64_C(0xe8d67481cf12c324), UINT64_C(0x3dc1a80712de14df),
    UINT64_C(0x9646cd056265e405), UINT64_C(0xc9ed5b85fe5de223), UINT64_C(0xc034e6309514ca00),
    UINT64_C(0xa55cb1a9ea35e9bd), UINT64_C(0x83585dac1418cf4c), UINT64_C(0xc6bfe6b67ae71dfa),
    UINT64_C(0xedde6a8095841598), UINT64_C(0x8c478074a66108d3), UINT64_C(0x49f4fb28492601c4),
    UINT64_C(0x6c1f1e9a65e7acb8), UINT64_C(0x44c3f220e0a3a35f), UINT64_C(0xc4422797ac160d7e),
    UINT64_C(0xa9bed55a11ad2c15), UINT64_C(0x29bdbe2cde52ac8d), UINT64_C(0xa2486ed01638fb0c),
    UINT64_C(0x7be91fdd8fa25058), UINT64_C(0x6d06c94a2118cf50), UINT64_C(0xbe19f2b9fcb649e5),
    UINT64_C(0x6da310d0ddefe702), UINT64_C(0x9db4d6197fe76870), UINT64_C(0xa1a8e96dd484eb63),
    UINT64_C(0xa2803dfd82f85916), UINT64_C(0x3a1a0a44d7644c46), UINT64_C(0x1a25188bb552aa62),
    UINT64_C(0xfa3eab18c620bd11), UINT64_C(0x33d24f4edd10ea99), UINT64_C(0x386d39256536cc6c),
    UINT64_C(0x607e759efb2ba1e8), UINT64_C(0x921ebb3d7c6c6071), UINT64_C(0x96ba6b088f86692f),
    UINT64_C(0xb2bd2aeaeafed279), UINT64_C(0xb70cc2def3ab10ac), UINT64_C(0x2b1c1284b0b6db2b),
    UINT64_C(0xd7d4c4db5bbdff92), UINT64_C(0x3f5b8190a0a0241e), UINT64_C(0x1b79f6457e60cfae),
    UINT64_C(0xa05c318c94181e91), UINT64_C(0x3480a671b033e3d5), UINT64_C(0x7579955efbbaa755),
    UINT64_C(0x2777c9f6d0c6b0d7), UINT64_C(0x2a0f21c2f6662c43), UINT64_C(0xc286b4bc45869bbc),
    UINT64_C(0x3de266b1c86ed249), UINT64_C(0x0596478ee80942c5), UINT64_C(0x6fd3618b2ee6ae1b),
    UINT64_C(0x3f08073a3e5dea77), UINT64_C(0x0e7847d01d6e71af), UINT64_C(0xcd1f81afc4fbaafe),
    UINT64_C(0x24be71c60778c940), UINT64_C(0x1dc2b6df046a9621), UINT64_C(0xd0944e93950f6ccf),
    UINT64_C(0xe2c767041ea34007), UINT64_C(0x521bf9c9206576c6), UINT64_C(0x866b7a2bd7715e51),
    UINT64_C(0x7a97753c8c793641), UINT64_C(0x52daac19784a65e4), UINT64_C(0x07d3110b7c73f7eb),
    UINT64_C(0xa66b273fbcc429b7), UINT64_C(0x16302dc85a75540a), UINT64_C(0xc840d3700a56e4de),
    UINT64_C(0xd6875303fcd05bff), UINT64_C(0xabbeed06a5e32588), UINT64_C(0x758a6526f8636a3a),
    UINT64_C(0x01be7adae8e62038), UINT64_C(0xc9b4bec75bc4f40a), UINT64_C(0xdc7a69ce0a9fc1c3),
    UINT64_C(0xf93f853c0adbaa64), UINT64_C(0xbe48b8658e39d5b6), UINT64_C(0x5233cc88f307cb85),
    UINT64_C(0x81f48c566746e404), UINT64_C(0xe6e72b2f3e111192), UINT64_C(0x6ee3ad5d7b4333d5),
    UINT64_C(0x3bebf80abf44e35e), UINT64_C(0x324f3dfa2996372c), UINT64_C(0xa60900d584d3294f),
    UINT64_C(0xcfb39707d3e017c8), UINT64_C(0xd33cd1090a56f237), UINT64_C(0xfae17ac7e5605d43),
    UINT64_C(0xc8c0106f0ead4419), UINT64_C(0x89bba8037b2a60be), UINT64_C(0x6999983c12a6557d),
    UINT64_C(0x29ecb289d4fc6351), UINT64_C(0xdc4e3ec308888d22), UINT64_C(0x2492188c7c1156a7),
    UINT64_C(0x476502781cf85a10), UINT64_C(0x8e5d5db3b1c10b44), UINT64_C(0x15bff6623ba91eb7),
    UINT64_C(0x716a28bba3f09c65), UINT64_C(0xd7f47607c92f30f1), UINT64_C(0x9e04907834879dad),
    UINT64_C(0xa611c59795db7099), UINT64_C(0x9a74c74315758aa3), UINT64_C(0x536d4c40116f3239),
    UINT64_C(0x52539ac587ad97d0), UINT64_C(0x1f1a1675f28959c3), UINT64_C(0x8c6d78f5619e8324),
    UINT64_C(0x2af1cfe563eff7ad), UINT64_C(0x3f9d2212e5c94b1d), UINT64_C(0x7e023d467b37b61f),
    UINT64_C(0xfaab76adabeee96b), UINT64_C(0xcff95dd9926b62d1), UINT64_C(0x3aa278a62172db76),
    UINT64_C(0x9982abe519c8c867), UINT64_C(0x34c2118df1f5857e), UINT64_C(0xfa7376b640136c80),
    UINT64_C(0x98a7d04ca29ade2f), UINT64_C(0x6d9f14b04d77e77e), UINT64_C(0x4b3dad048bed47a1),
    UINT64_C(0x4c9ee5e4931d3231), UINT64_C(0xbaf4eba543f33d0a), UINT64_C(0x793aafa07373d926),
    UINT64_C(0x986ea60fe6b39a32), UINT64_C(0xe31f344f666361e6), UINT64_C(0xf21cbedc44c049cb),
    UINT64_C(0xc4f752a0eb5e5403), UINT64_C(0xaf1b99e27d410520), UINT64_C(0x592740a0e5b8c3dd),
    UINT64_C(0x04fc4ea5fb446c97), UINT64_C(0xad6e587f47afe7a6), UINT64_C(0xde542c137b8384a4),
    UINT64_C(0x2a0ffc0f7b301e5c), UINT64_C(0x820547300a5d8af4), UINT64_C(0xd3c639c2087dc079),
    UINT64_C(0x0a467ca8709a2bb6), UINT64_C(0xe242bb6bb4da36de), UINT64_C(0x6079b0531ec90376),
    UINT64_C(0x058ccf98dc1843f7), UINT64_C(0x8417b417b011aec1), UINT64_C(0xecdedd4ff0dd641b),
    UINT64_C(0x8c3787282349e832), UINT64_C(0xd5f0bb8816e7e8fb), UINT64_C(0x85b650480fd8c2f4),
    UINT64_C(0x7d45aa734f760b6d), UINT64_C(0x5962428553d20814), UINT64_C(0x400e2ba01968e7c4),
    UINT64_C(0x077e19b9a3f76000), UINT64_C(0x1d17558f6164030c), UINT64_C(0x79753148c0e6c59f),
    UINT64_C(0x9a77d2f2ef3bd843), UINT64_C(0x666eb88d8701e16f), UINT64_C(0x5572e7ce34288668),
    UINT64_C(0xeb8d82b15491d607), UINT64_C(0x77c265a71aebbe54), UINT64_C(0x4947dddd6f3e9e07),
    UINT64_C(0x628dfe635c795586), UINT64_C(0x22673e39d43ff99b), UINT64_C(0x637e086dc78cf522),
    UINT64_C(0xee37e3669f7e9c66), UINT64_C(0x92d7bb47a4afe838), UINT64_C(0x1f9eabdfdbe2b7bd),
    UINT64_C(0x324fca6af2b5c1d1), UINT64_C(0x59e4a152525b1b29), UINT64_C(0x7c91d10a8d75740e),
    UINT64_C(0xcc7c533a7fca95d8), UINT64_C(0x1266fbf77386b1db), UINT64_C(0x689a66ba46d1c3bd),
    UINT64_C(0x4bd671b124b5701a), UINT64_C(0x2c43fd0a9eaec04d), UINT64_C(0x58143117e4e16555),
    UINT64_C(0x8358c5bb1248ac23), UINT64_C(0xaaf677bd80e30ac5), UINT64_C(0xfc997227a4f07f8f),
    UINT64_C(0xa848cc5d9cb0e150), UINT64_C(0x640a711eb0e49b41), UINT64_C(0x64fcbfa01dca3978),
    UINT64_C(0x980aab2fff6bc784), UINT64_C(0x395c6750aa42e65e), UINT64_C(0x287fea4c9695f3f4),
    UINT64_C(0x9516361749f6428a), UINT64_C(0xc977d592999f2194), UINT64_C(0xc45166d9f6935ff8),
    UINT64_C(0xa7f503a28f431ca9), UINT64_C(0x51d3a3c351be10ec), UINT64_C(0xf579e080162896e9),
    UINT64_C(0xe5b5e9385b202824), UINT64_C(0xfbba1e4a59b0c60c), UINT64_C(0xa8de655829aab207),
    UINT64_C(0xe1de048dc78b382e), UINT64_C(0x74535a96cc7adfd7), UINT64_C(0x7e57a19b735ef03b),
    UINT64_C(0x39a00a3a31c025c6),
};

/* x <- 48271 x mod (2^31 - 1), by Schrage's method as Go computes it. */
static int32_t seedrand(int32_t x)
{
    const int32_t a = 48271, q = 44488, rr = 3399;
    int32_t hi = x / q, lo = x % q;
    x = a * lo - rr * hi;
    if (x < 0)
        x += INT32MAX;
    return x;
}

void fair_gorand_seed(struct fair_gorand *r, int64_t seed)
{
    r->tap = 0;
    r->feed = FAIR_GORAND_LEN - FAIR_GORAND_TAP;
    seed %= INT32MAX; /* C's % truncates toward zero, as Go's does */
    if (seed < 0)
        seed += INT32MAX;
    if (seed == 0)
        seed = 89482311;
    int32_t x = (int32_t)seed;
    for (int i = -20; i < FAIR_GORAND_LEN; i++) {
        x = seedrand(x);
        if (i >= 0) {
            uint64_t u = (uint64_t)(int64_t)x << 40;
            x = seedrand(x);
            u ^= (uint64_t)(int64_t)x << 20;
            x = seedrand(x);
            u ^= (uint64_t)(int64_t)x;
            u ^= cooked[i];
            r->vec[i] = u;
        }
    }
}

uint64_t fair_gorand_uint64(struct fair_gorand *r)
{
    if (--r->tap < 0)
        r->tap += FAIR_GORAND_LEN;
    if (--r->feed < 0)
        r->feed += FAIR_GORAND_LEN;
    uint64_t x = r->vec[r->feed] + r->vec[r->tap];
    r->vec[r->feed] = x;
    return x;
}

int64_t fair_gorand_int63(struct fair_gorand *r)
{
    return (int64_t)(fair_gorand_uint64(r) & MASK63);
}

uint32_t fair_gorand_uint32(struct fair_gorand *r)
{
    return (uint32_t)(fair_gorand_int63(r) >> 31);
}

int32_t fair_gorand_int31(struct fair_gorand *r)
{
    return (int32_t)(fair_gorand_int63(r) >> 32);
}

int64_t fair_gorand_int(struct fair_gorand *r)
{
    return fair_gorand_int63(r); /* uint(Int63()) << 1 >> 1 on 64 bits */
}

int64_t fair_gorand_int63n(struct fair_gorand *r, int64_t n)
{
    if (n <= 0)
        return 0;
    if ((n & (n - 1)) == 0)
        return fair_gorand_int63(r) & (n - 1);
    int64_t max = (int64_t)(MASK63 - ((uint64_t)1 << 63) % (uint64_t)n);
    int64_t v = fair_gorand_int63(r);
    while (v > max)
        v = fair_gorand_int63(r);
    return v % n;
}

int32_t fair_gorand_int31n(struct fair_gorand *r, int32_t n)
{
    if (n <= 0)
        return 0;
    if ((n & (n - 1)) == 0)
        return fair_gorand_int31(r) & (n - 1);
    int32_t max = (int32_t)((uint32_t)INT32MAX - ((uint32_t)1 << 31) % (uint32_t)n);
    int32_t v = fair_gorand_int31(r);
    while (v > max)
        v = fair_gorand_int31(r);
    return v % n;
}

/* Go's unexported int31n (Lemire's multiply-shift), used by Shuffle. */
static int32_t int31n_lemire(struct fair_gorand *r, int32_t n)
{
    uint32_t v = fair_gorand_uint32(r);
    uint64_t prod = (uint64_t)v * (uint64_t)n;
    uint32_t low = (uint32_t)prod;
    if (low < (uint32_t)n) {
        uint32_t thresh = (uint32_t)(-n) % (uint32_t)n;
        while (low < thresh) {
            v = fair_gorand_uint32(r);
            prod = (uint64_t)v * (uint64_t)n;
            low = (uint32_t)prod;
        }
    }
    return (int32_t)(prod >> 32);
}

int64_t fair_gorand_intn(struct fair_gorand *r, int64_t n)
{
    if (n <= 0)
        return 0;
    if (n <= INT32MAX)
        return fair_gorand_int31n(r, (int32_t)n);
    return fair_gorand_int63n(r, n);
}

void fair_gorand_perm(struct fair_gorand *r, int64_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)fair_gorand_intn(r, (int64_t)i + 1);
        out[i] = j < i ? out[j] : 0; /* Go's slice starts zeroed */
        out[j] = (int64_t)i;
    }
}

void fair_gorand_shuffle(struct fair_gorand *r, size_t n,
                         void (*swap)(void *ctx, size_t i, size_t j), void *ctx)
{
    if (n == 0)
        return;
    size_t i = n - 1;
    for (; i > (size_t)INT32MAX - 1; i--)
        swap(ctx, i, (size_t)fair_gorand_int63n(r, (int64_t)i + 1));
    for (; i > 0; i--)
        swap(ctx, i, (size_t)int31n_lemire(r, (int32_t)(i + 1)));
}
